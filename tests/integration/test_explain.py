"""fpull explains itself (issue 12 item 7): inspect says which ranking rule put rank 1
above rank 2, in the table and as a `why` field; `features` starts with a one-line
summary, sorts versions as versions, and under -v names the CPU by what it can run (not
libcpuid's codename guess) and says why NVIDIA detection found nothing."""
import os
import re

import cases
import fpull
import images

SRC = os.environ["FPULL_SRC_DIR"]
BUILD = os.environ["FPULL_BUILD_DIR"]
FAKE_NVML = os.path.join(BUILD, "tests", "nvml", "full", "libnvidia-ml.so.1")
CPUID = os.path.join(SRC, "tests", "fixtures", "cpuid")
KFD = os.path.join(SRC, "tests", "fixtures", "kfd")
PLAT = {"os": "linux", "architecture": "amd64"}


def no_gpu_env(tmp, **extra):
    e = {"FPULL_NVML_LIBRARY": os.path.join(tmp, "no-libnvidia-ml.so.1"),
         "FPULL_CUDA_LIBRARY": os.path.join(tmp, "no-libcuda.so.1"),
         "FPULL_NVIDIA_PROC_VERSION": os.path.join(tmp, "no-version"),
         "FPULL_SYSFS_ROOT": os.path.join(KFD, "cpuonly"),
         "CUDA_VISIBLE_DEVICES": None, "NVIDIA_VISIBLE_DEVICES": None}
    e.update(extra)
    return e


class ExplainRanking(cases.RegistryCase):
    def index(self, tag, platforms):
        """An index of distinct images with the given platforms; returns their digests."""
        imgs = [images.push_image(self.client, "x/app", None,
                                  [[{"path": "e", "data": "%s %d\n" % (tag, i)}]])
                for i in range(len(platforms))]
        images.push_index(self.client, "x/app", tag,
                          [(img, dict(PLAT, **p)) for img, p in zip(imgs, platforms)])
        return [img["digest"] for img in imgs]

    def inspect(self, tag, platform, *extra):
        ref = "%s/x/app:%s" % (self.reg.hostport, tag)
        args = ["inspect", "--cache-dir", os.path.join(self.tmp, "c"), "--platform", platform, ref]
        _, doc = fpull.run_json(args)
        table = fpull.run(args + list(extra), check=0).stdout
        return doc, table

    def why(self, doc, rank):
        (e,) = [e for e in doc["entries"] if e["rank"] == rank]
        return e["why"]

    def test_target_with_many_features_is_wrapped_not_one_line(self):
        # Issue 25: all 85 features of a GPU node's target were one line of inspect.
        self.index("wrap", [{"features": ["skylake-avx512"]}, {}])
        # (Listed with -v; without it the target is one line: issue 43.11.)
        doc, table = self.inspect(
            "wrap", "linux/amd64:skylake-avx512:nv-compute-9-0:nvidia-550-54-14:cuda-12-4", "-v")
        feats = doc["target"]["features"]
        self.assertGreater(len(", ".join(feats)), 200)  # many: these need several lines
        lines = table.splitlines()
        start = [i for i, l in enumerate(lines) if l.startswith("target: ")][0]
        end = [i for i, l in enumerate(lines) if l.startswith("RANK ")][0]
        target = lines[start:end]
        self.assertGreater(len(target), 2)
        for line in target:
            self.assertLessEqual(len(line), 79, line)
        self.assertTrue(all(l.startswith("        ") for l in target[1:]), target)
        text = " ".join(l.strip() for l in target).split(" ", 2)[2]  # after "target: OS/ARCH"
        self.assertEqual(text.replace(", ", ",").split(","), feats)  # all, in order

    def test_rule_1_more_features(self):
        # The case: with a skylake-avx512 target, broadwell+nv-compute-5-2 beats
        # skylake-avx512 on the number of features alone.
        d = self.index("r1", [{"features": ["skylake-avx512"]},
                              {"features": ["broadwell", "nv-compute-5-2"]}])
        doc, table = self.inspect("r1", "linux/amd64:skylake-avx512:nv-compute-5-2")
        self.assertEqual(doc["chosen"], d[1])
        self.assertEqual(self.why(doc, 1), "more features than rank 2 (2 vs 1; rule 1)")
        self.assertIsNone(self.why(doc, 2))  # the last one beats nobody
        self.assertRegex(table, r"chosen: more features than rank 2 \(2 vs 1; rule 1\)")

    def test_rule_2_higher_variant(self):
        self.index("r2", [{"variant": "v2"}, {"variant": "v3"}])
        doc, table = self.inspect("r2", "linux/amd64/v4")
        self.assertEqual(self.why(doc, 1), "higher variant than rank 2 (v3 vs v2; rule 2)")
        self.assertIn("(v3 vs v2; rule 2)", table)

    def test_rule_3_more_demanding_tag(self):
        # Two tags of one x86-64 level (v3): rule 2 ties, rule 3 decides.
        self.index("r3", [{"features": ["haswell"]}, {"features": ["skylake"]}])
        doc, _ = self.inspect("r3", "linux/amd64:skylake")
        self.assertRegex(self.why(doc, 1),
                         r"^more demanding CPU tag than rank 2 \(skylake, \d+ extensions, "
                         r"vs haswell, \d+; rule 3\)$")

    def test_rule_2_level_implied_by_the_tag(self):
        # Issue 33: skylake-avx512 without a variant ranks as x86-64-v4.
        self.index("r2t", [{"features": ["haswell"], "variant": "v3"},
                           {"features": ["skylake-avx512"]}])
        doc, _ = self.inspect("r2t", "linux/amd64:skylake-avx512")
        self.assertEqual(self.why(doc, 1), "higher variant than rank 2 (v4 vs v3; rule 2)")

    def test_rule_4_and_rule_5(self):
        d = self.index("r4", [{"features": ["nv-compute-5-0"]}, {"features": ["nv-compute-5-2"]},
                              {"features": ["nv-compute-5-0"]}])
        doc, table = self.inspect("r4", "linux/amd64:nv-compute-5-2")
        self.assertEqual(doc["chosen"], d[1])
        self.assertEqual(self.why(doc, 1), "higher compute capability than rank 2 "
                                           "(nv-compute-5-2 vs nv-compute-5-0; rule 4)")
        self.assertEqual(self.why(doc, 2),
                         "earlier in the index than rank 3 (equal on rules 1-4; rule 5)")
        self.assertIn("eligible: earlier in the index than rank 3", table)


class ExplainFeatures(cases.RegistryCase):
    def features(self, *args, env=None):
        return fpull.run(["features"] + list(args), env=env, check=0)

    def test_summary_line_first(self):
        cp = self.features(env=no_gpu_env(self.tmp, FPULL_CPUID_FILE=os.path.join(
            CPUID, "skylake-sp.txt")))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        first = cp.stdout.splitlines()[0]
        self.assertEqual(first, "summary: linux/amd64, best CPU tag skylake-avx512 (x86-64-v4), "
                                "no NVIDIA driver, no NVIDIA GPU")

    def test_summary_names_driver_and_gpus(self):
        env = no_gpu_env(self.tmp, FPULL_CPUID_FILE=os.path.join(CPUID, "zen4-epyc-9004.txt"),
                         FPULL_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_GPUS="9.0,9.0",
                         FAKE_NVML_DRIVER="550.54.14", FAKE_NVML_CUDA="12040")
        cp = self.features(env=env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines()[0],
                         "summary: linux/amd64, best CPU tag znver4 (x86-64-v4), NVIDIA driver "
                         "550.54.14 (cuda-12-4), 2 GPUs nv-compute-9-0")

    def test_versions_sort_as_versions(self):
        cp = self.features("--features", "nvidia-550-54-14,nv-compute-8-6",
                           env=no_gpu_env(self.tmp))
        names = [l.split()[0] for l in cp.stdout.splitlines() if l.startswith("  ")]
        cuda = [n for n in names if n.startswith("cuda-")]
        self.assertLess(cuda.index("cuda-2-0"), cuda.index("cuda-10-0"))
        self.assertLess(cuda.index("cuda-9-2"), cuda.index("cuda-10-0"))
        self.assertEqual(cuda[-1], "cuda-12-4")
        nv = [n for n in names if n.startswith("nvidia-")]
        self.assertEqual(nv, ["nvidia-550", "nvidia-550-54", "nvidia-550-54-14"])

    def test_verbose_names_cpu_by_tag_not_codename(self):
        for dump, tag in (("skylake-sp.txt", "skylake-avx512"), ("zen5-epyc-9005.txt", "znver5")):
            cp = self.features("-v", env=no_gpu_env(
                self.tmp, FPULL_CPUID_FILE=os.path.join(CPUID, dump)))
            cpu = [l for l in cp.stderr.splitlines() if l.startswith("cpu: ")]
            self.assertEqual(len(cpu), 1, cp.stderr)
            self.assertRegex(cpu[0], r"^cpu: \w+, best tag %s \(x86-64-v4\)$" % tag)
        # This host's own CPU: no libcpuid codename after the vendor either.
        cp = self.features("-v", env=no_gpu_env(self.tmp))
        cpu = [l for l in cp.stderr.splitlines() if l.startswith("cpu: ")]
        self.assertRegex(cpu[0], r"^cpu: \w+, best tag \S+( \(x86-64-v\d\))?$")

    def test_verbose_says_why_no_nvidia(self):
        cp = self.features("-v", env=no_gpu_env(self.tmp))
        line = [l for l in cp.stderr.splitlines() if l.startswith("nvidia: ")]
        self.assertEqual(len(line), 1, cp.stderr)
        self.assertIn("nothing found", line[0])
        self.assertIn("no-libnvidia-ml.so.1", line[0])
        # Every GPU held by another job: a driver but no GPU, and the library's reason.
        cp = self.features("-v", env=no_gpu_env(self.tmp, FPULL_NVML_LIBRARY=FAKE_NVML,
                                                FAKE_NVML_GPUS="8.0", FAKE_NVML_DENIED="0"))
        line = [l for l in cp.stderr.splitlines() if l.startswith("nvidia: ")]
        self.assertEqual(len(line), 1, cp.stderr)
        self.assertRegex(line[0], r"^nvidia: driver only, no GPU counted: GPU 0: .*[Pp]ermission")
        # Found: nothing to explain.
        cp = self.features("-v", env=no_gpu_env(self.tmp, FPULL_NVML_LIBRARY=FAKE_NVML,
                                                FAKE_NVML_GPUS="8.0"))
        self.assertNotIn("nvidia: ", cp.stderr)
