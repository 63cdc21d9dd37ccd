"""fpull features: detection, config, FPULL_FEATURES and the command line, with sources."""
import os
import tempfile
import unittest

import fpull

SRC = os.environ["FPULL_SRC_DIR"]
BUILD = os.environ["FPULL_BUILD_DIR"]
CPUID = os.path.join(SRC, "tests", "fixtures", "cpuid")


def cpuid_file(name):
    for f in os.listdir(CPUID):
        if name in f:
            return os.path.join(CPUID, f)
    raise AssertionError("no cpuid fixture like %s in %s" % (name, os.listdir(CPUID)))


class FeaturesCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(fpull.rmtree, self.tmp)
        # A recorded Broadwell and no GPU, so the test means the same on every machine.
        self.env = {"FPULL_CPUID_FILE": cpuid_file("broadwell"),
                    "FPULL_NVML_LIBRARY": os.path.join(self.tmp, "no-such-libnvidia-ml.so.1"),
                    "FPULL_NVIDIA_PROC_VERSION": os.path.join(self.tmp, "no-such-file")}

    def config(self, text):
        p = os.path.join(self.tmp, "config.yaml")
        with open(p, "w") as f:
            f.write(text)
        return p

    def features(self, *args, env=None):
        e = dict(self.env)
        e.update(env or {})
        _, doc = fpull.run_json(["features"] + list(args), env=e)
        self.assertEqual(sorted(doc["features"]), sorted(doc["sources"]))
        return doc

    def test_detected_broadwell(self):
        doc = self.features()
        self.assertEqual((doc["os"], doc["architecture"], doc["variant"]),
                         ("linux", "amd64", "v3"))
        self.assertEqual(doc["sources"]["broadwell"], "cpu")
        self.assertEqual(doc["sources"]["haswell"], "cpu")
        self.assertNotIn("skylake", doc["sources"])
        self.assertNotIn("x86-64-v4", doc["sources"])
        self.assertFalse([f for f in doc["features"] if f.startswith("nvidia")])

    def test_config_and_env_add_with_source_config(self):
        cfg = self.config("site-features: [infiniband, lustre]\n"
                          "platform-features: [infiniband, nvidia-396-44]\n")
        doc = self.features("--config", cfg, env={"FPULL_FEATURES": "Lustre,skylake"})
        s = doc["sources"]
        self.assertEqual(s["infiniband"], "config")
        self.assertEqual(s["lustre"], "config")  # printed in lower case
        self.assertEqual(s["nvidia-396-44"], "config")
        self.assertEqual(s["nvidia-396"], "config")  # implied, carries its source
        self.assertEqual(s["skylake"], "config")
        self.assertEqual(s["broadwell"], "cpu")  # direct detection beats config implication

    def test_detect_false_keeps_configured_features(self):
        cfg = self.config("detect: false\nplatform-features: [haswell]\nsite-features: [gpu-x]\n")
        doc = self.features("--config", cfg, env={"FPULL_FEATURES": "gpu-x"})
        self.assertNotIn("broadwell", doc["sources"])
        self.assertEqual(doc["sources"]["haswell"], "config")
        self.assertEqual(doc["sources"]["gpu-x"], "config")
        self.assertEqual(doc["variant"], "v3")

    def test_command_line_replaces_everything(self):
        cfg = self.config("site-features: [infiniband, lustre, foo, bar]\n"
                          "platform-features: [infiniband]\n")
        env = {"FPULL_FEATURES": "lustre"}
        doc = self.features("--config", cfg, "--features", "skylake512,nvidia-580-159-04",
                            env=env)
        s = doc["sources"]
        self.assertNotIn("infiniband", s)
        self.assertNotIn("lustre", s)
        self.assertEqual(set(s.values()), {"cli"})
        for f in ("skylake-avx512", "skylake", "broadwell", "x86-64-v4", "nvidia-580-159",
                  "nvidia-580"):
            self.assertIn(f, s)
        self.assertNotIn("skylake512", s)  # aliases are shown under the canonical name
        self.assertEqual(doc["variant"], "v4")
        # Issue 33: on the host's own architecture a bare --platform keeps what detection
        # finds (the recorded Broadwell), not the config's or the environment's features;
        # a variant keeps what fits it; --features '' asks for none.
        doc = self.features("--config", cfg, "--platform", "linux/amd64", env=env)
        self.assertEqual(doc["sources"]["broadwell"], "cpu")
        self.assertNotIn("lustre", doc["sources"])
        self.assertNotIn("infiniband", doc["sources"])
        self.assertEqual(doc["variant"], "v3")
        doc = self.features("--platform", "linux/amd64/v2", env=env)
        self.assertEqual(doc["sources"]["westmere"], "cpu")
        for f in ("haswell", "sandybridge", "avx", "avx2", "x86-64-v3"):
            self.assertNotIn(f, doc["sources"])
        self.assertEqual(doc["variant"], "v2")
        doc = self.features("--platform", "linux/amd64", "--features", "", env=env)
        self.assertEqual(doc["features"], [])
        self.assertEqual(doc["variant"], "v1")
        doc = self.features("--platform", "linux/arm64", env=env)
        self.assertEqual((doc["features"], doc["variant"]), ([], "v8"))
        doc = self.features("--config", cfg, "--platform", "linux/arm64:foo", "--features", "bar")
        self.assertEqual((doc["architecture"], doc["variant"]), ("arm64", "v8"))
        self.assertEqual(sorted(doc["features"]), ["bar", "foo"])
        doc = self.features("--platform", "linux/amd64/v2:haswell")
        self.assertEqual(doc["variant"], "v2")

    def test_every_compilers_names_are_accepted(self):
        # Issue 42: GCC 12's amdfam10 and the newest GCC's znver5, arrowlake-s, the Zhaoxin
        # names, each with its ISA and what it implies; a typo still gets "did you mean".
        doc = self.features("--features", "amdfam10,znver5")
        s = doc["sources"]
        for f in ("amdfam10", "znver5", "znver4", "k8-sse3", "x86-64-v4", "sse4a", "3dnow"):
            self.assertIn(f, s)
        self.assertEqual(set(s.values()), {"cli"})
        for name in ("barcelona", "nocona", "nano-x4", "arrowlake-s", "pantherlake",
                     "graniterapids-d", "lujiazui", "yongfeng", "shijidadao", "raptorlake"):
            self.features("--features", name)
        cp = fpull.run(["features", "--features", "amdfam11"], env=self.env)
        self.assertEqual(cp.returncode, 2)
        self.assertIn('did you mean "amdfam10"', fpull.error_line(cp.stderr))
        # With -v, each tag with its architecture and ISA (what does not gate in parentheses),
        # each alias with its tag; without, names only (the completion reads them).
        lines = fpull.run(["features", "--list-known", "-v"], env=self.env,
                          check=0).stdout.splitlines()
        self.assertIn("barcelona = amdfam10", lines)
        amdfam10 = [ln for ln in lines if ln.startswith("amdfam10 ")]
        self.assertEqual(len(amdfam10), 1, lines[:5])
        self.assertTrue(amdfam10[0].startswith("amdfam10 amd64 "), amdfam10)
        self.assertIn(" sse4a", amdfam10[0])
        spr = [ln for ln in lines if ln.startswith("sapphirerapids ")][0].split()
        self.assertIn("(amx_tile)", spr)
        self.assertIn("avx512fp16", spr)
        known = fpull.run(["features", "--list-known"], env=self.env, check=0).stdout.split()
        for name in ("amdfam10", "znver5", "arrowlake-s", "clearwaterforest", "diamondrapids",
                     "nano-3000", "eden-x2", "x86-64", "penryn", "skx"):
            self.assertIn(name, known)

    def test_bad_input_exits_2(self):
        for args in (["--features", "bad name"], ["--platform", "linux"],
                     ["--config", os.path.join(self.tmp, "missing.yaml")]):
            cp = fpull.run(["features"] + args, env=self.env)
            self.assertEqual(cp.returncode, 2, (args, cp.stderr))
            fpull.error_line(cp.stderr)
        cfg = self.config("platform-features: [a\n")
        cp = fpull.run(["features", "--config", cfg], env=self.env)
        self.assertEqual(cp.returncode, 2)
        self.assertRegex(fpull.error_line(cp.stderr), r"config\.yaml:\d+:\d+")

    def test_verbose_names_what_a_tag_lacks(self):
        cp = fpull.run(["features", "-v"],
                       env=dict(self.env, FPULL_CPUID_FILE=cpuid_file("turin")), check=0)
        # Near misses by what gates; what the VM hides of its best tag's chip, by name
        # (issue 33: RDSEED and MWAITX no longer take broadwell and znver5 away).
        self.assertIn("bdver1: no fma4, xop", cp.stderr)
        self.assertIn("znver5: hidden here, not gating (intrinsic-only): mwaitx, prefetchi, "
                      "rdpid, rdseed", cp.stderr)
        self.assertNotIn("broadwell: no", cp.stderr)
        self.assertIn("x86-64-v4", cp.stdout)
        self.assertIn(" broadwell ", cp.stdout)
        self.assertIn("best CPU tag znver5 (x86-64-v4)", cp.stdout)

    def test_hidden_only_under_a_hypervisor(self):
        # Issue 42: a bare-metal Raptor Lake has no CLDEMOTE (GCC 12's alderlake lists it);
        # that is the part, not something hidden. The same CPUID with the hypervisor bit set
        # (CPUID.1:ECX[31]) is a VM that may hide it, and -v says so.
        bare = os.path.join(CPUID, "instlatx64", "genui-00b0671_raptorlake_01.txt")
        cp = fpull.run(["features", "-v"], env=dict(self.env, FPULL_CPUID_FILE=bare), check=0)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("cpu: GenuineIntel, best tag alderlake (x86-64-v3)", cp.stderr)
        self.assertNotIn("hidden here", cp.stderr)
        self.assertNotIn("own generation", cp.stderr)
        vm = os.path.join(self.tmp, "raptorlake-vm.txt")
        with open(bare) as f, open(vm, "w") as out:
            for ln in f:
                w = ln.split()
                if len(w) == 6 and w[0] == "1" and w[1] == "0":
                    w[4] = "%08x" % (int(w[4], 16) | 1 << 31)
                    ln = " ".join(w) + "\n"
                out.write(ln)
        cp = fpull.run(["features", "-v"], env=dict(self.env, FPULL_CPUID_FILE=vm), check=0)
        self.assertIn("alderlake: hidden here, not gating (intrinsic-only): cldemote",
                      cp.stderr)

    def test_own_generation_that_cannot_run_says_why(self):
        # An early Nocona lacks CMPXCHG16B, which -march=nocona enables.
        nocona = os.path.join(CPUID, "instlatx64", "genui-0000f34_p4_nocona.txt")
        cp = fpull.run(["features", "-v"], env=dict(self.env, FPULL_CPUID_FILE=nocona),
                       check=0)
        self.assertIn("best CPU tag x86-64 (variant v1)", cp.stdout)
        self.assertIn("cpu: own generation nocona (family 0xf model 0x3) cannot run here: "
                      "no cx16 (this part or the OS does not enable them)", cp.stderr)
        # A whole dump (every leaf and subleaf) is taken as FPULL_CPUID_FILE.
        whole = os.path.join(CPUID, "instlatx64", "whole-graniterapids.txt")
        cp = fpull.run(["features"], env=dict(self.env, FPULL_CPUID_FILE=whole), check=0)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("best CPU tag graniterapids (x86-64-v4)", cp.stdout)

    def test_fake_nvml_gives_driver_and_compute(self):
        lib = os.path.join(BUILD, "tests", "nvml", "full", "libnvidia-ml.so.1")
        if not os.path.exists(lib):
            self.fail("stand-in NVML library not built: %s" % lib)
        doc = self.features(env={"FPULL_NVML_LIBRARY": lib, "FAKE_NVML_DRIVER": "396.44",
                                 "FAKE_NVML_CUDA": "9020", "FAKE_NVML_GPUS": "5.2"})
        s = doc["sources"]
        for f in ("nvidia-396-44", "nvidia-396", "nv-compute-5-2", "nv-compute-5-0",
                  "cuda-9-2", "cuda-9-0"):
            self.assertEqual(s.get(f), "nvidia", f)

    def test_twenty_thousand_site_features(self):
        # Issue 20.9: every given name was checked against a list rebuilt for it (8,000
        # site features took 95 s); now one sorted list serves them all.
        names = ["sitefeat%05d" % i for i in range(20000)]
        cfg = self.config("site-features: [%s]\nplatform-features: [%s]\n"
                          % (", ".join(names), ", ".join(names)))
        doc = self.features("--config", cfg, env={"FPULL_FEATURES": "sitefeat19999"})
        for n in names:
            self.assertEqual(doc["sources"].get(n), "config", n)
        # A typo among them still gets its "did you mean", from the config and the
        # environment alike.
        cp = fpull.run(["features", "--config", cfg],
                       env=dict(self.env, FPULL_FEATURES="sitefaet07777"), check=2)
        self.assertIn('did you mean "sitefeat07777"', fpull.error_line(cp.stderr))
        bad = self.config("site-features: [%s]\nplatform-features: [%s, sitefeat1234x]\n"
                          % (", ".join(names), ", ".join(names)))
        cp = fpull.run(["features", "--config", bad], env=self.env, check=2)
        self.assertIn('unknown feature "sitefeat1234x"', fpull.error_line(cp.stderr))
        self.assertIn("did you mean", fpull.error_line(cp.stderr))
