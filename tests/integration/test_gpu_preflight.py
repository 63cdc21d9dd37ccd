"""GPU preflight (contract v3, issue 15 item 7) against the real registry: an entry whose
image config requires a CUDA the target's driver cannot run is not eligible, decided from
the config before any layer is downloaded, and shown by inspect."""
import json
import os

import fpull
import images
from cases import RegistryCase

BUILD = os.environ["FPULL_BUILD_DIR"]
FAKE_NVML = os.path.join(BUILD, "tests", "nvml", "full", "libnvidia-ml.so.1")

# NVIDIA's CUDA 12.4 images carry this shape: cuda>=12.4, or one of the brand/driver
# forward-compatibility alternatives.
REQ_124 = ("cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 "
           "brand=geforce,driver>=535,driver<536")
GPU_FEATURES = "nvidia-525-60-13,nv-compute-8-0"


def env_config(*env):
    return {"config": {"Env": ["PATH=/usr/bin:/bin"] + list(env)}}


class GpuPreflight(RegistryCase):
    def setUp(self):
        super().setUp()
        self.repo = "gpu/cuda"
        # The CUDA 12.4 entry is the better one (more features), the 11.8 one the fallback.
        self.big = os.urandom(256 * 1024)
        self.cuda124 = images.push_image(
            self.client, self.repo, None,
            [[{"path": "big.bin", "data": self.big}]],
            config_extra=env_config("CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=" + REQ_124))
        self.cuda118 = images.push_image(
            self.client, self.repo, None, [[{"path": "small.txt", "data": b"11.8\n"}]],
            config_extra=env_config("CUDA_VERSION=11.8.0", "NVIDIA_REQUIRE_CUDA=cuda>=11.8"))
        self.disabled = images.push_image(
            self.client, self.repo, "disabled", [[{"path": "d.txt", "data": b"d\n"}]],
            config_extra=env_config("NVIDIA_REQUIRE_CUDA=cuda>=12.4", "NVIDIA_DISABLE_REQUIRE=1"))
        plat = {"os": "linux", "architecture": "amd64"}
        images.push_index(self.client, self.repo, "latest", [
            (self.cuda124, dict(plat, features=["nv-compute-8-0"])),
            (self.cuda118, dict(plat)),
        ])
        images.push_index(self.client, self.repo, "only124", [
            (self.cuda124, dict(plat, features=["nv-compute-8-0"])),
        ])
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache"),
                    "FPULL_NVML_LIBRARY": os.path.join(self.tmp, "no-libnvidia-ml.so.1"),
                    "FPULL_CUDA_LIBRARY": os.path.join(self.tmp, "no-libcuda.so.1"),
                    "FPULL_NVIDIA_PROC_VERSION": os.path.join(self.tmp, "no-version")}

    def ref(self, tag="latest"):
        return "%s/%s:%s" % (self.reg.hostport, self.repo, tag)

    def inspect(self, *args, tag="latest", check=0, env=None):
        e = dict(self.env)
        e.update(env or {})
        _, doc = fpull.run_json(["inspect"] + list(args) + [self.ref(tag)], env=e, check=check)
        return {x["digest"]: x for x in doc["entries"]}, doc

    def fake_gpu(self, brand):
        """The stand-in NVML: driver 525.60.13 (CUDA 12.0), one 8.0 GPU of BRAND."""
        return {"FPULL_NVML_LIBRARY": FAKE_NVML, "FAKE_NVML_DRIVER": "525.60.13",
                "FAKE_NVML_CUDA": "12000", "FAKE_NVML_GPUS": "8.0", "FAKE_NVML_BRAND": brand}

    def test_rejects_cuda_124_on_525(self):
        entries, doc = self.inspect("--features", GPU_FEATURES)
        a, b = entries[self.cuda124["digest"]], entries[self.cuda118["digest"]]
        self.assertFalse(a["eligible"], doc)
        self.assertIsNone(a["rank"])
        self.assertEqual(a["missing"], [])
        self.assertTrue(b["eligible"])
        self.assertEqual(b["rank"], 1)
        self.assertEqual(doc["chosen"], self.cuda118["digest"])
        # The human table names the requirement and what the driver gives.
        cp = fpull.run(["inspect", "--features", GPU_FEATURES, self.ref()], env=self.env,
                       check=0)
        self.assertIn("requires cuda>=12.4 (or 3 other alternatives); the driver gives "
                      "cuda-12-0", cp.stdout + cp.stderr)
        # Without a driver feature there is nothing to check: the 12.4 entry wins again.
        entries, doc = self.inspect("--features", "nv-compute-8-0")
        self.assertEqual(doc["chosen"], self.cuda124["digest"])
        # A 550 driver (CUDA 12.4) runs it.
        entries, doc = self.inspect("--features", "nvidia-550-54-14,nv-compute-8-0")
        self.assertEqual(doc["chosen"], self.cuda124["digest"])

    def test_brand_alternative_accepts(self):
        # Through detection: NVML says tesla, so brand=tesla,driver>=525,driver<526 holds.
        entries, doc = self.inspect(env=self.fake_gpu("2"))
        self.assertIn("nvidia-525-60-13", doc["target"]["features"])
        self.assertTrue(entries[self.cuda124["digest"]]["eligible"], doc)
        self.assertEqual(doc["chosen"], self.cuda124["digest"])
        # A GeForce on 525 has no alternative: the 11.8 entry.
        entries, doc = self.inspect(env=self.fake_gpu("5"))
        self.assertFalse(entries[self.cuda124["digest"]]["eligible"])
        self.assertEqual(doc["chosen"], self.cuda118["digest"])
        # With --features no brand is known: brand clauses never hold.
        entries, doc = self.inspect("--features", GPU_FEATURES, env=self.fake_gpu("2"))
        self.assertEqual(doc["chosen"], self.cuda118["digest"])

    def test_disable_require(self):
        entries, doc = self.inspect("--features", GPU_FEATURES, tag="disabled")
        self.assertEqual(doc["chosen"], self.disabled["digest"])
        self.assertTrue(entries[self.disabled["digest"]]["eligible"])

    def test_pull_picks_next_without_its_layers(self):
        dest = os.path.join(self.tmp, "root")
        e = dict(self.env)
        cp, doc = fpull.run_json(["pull", "--features", GPU_FEATURES, self.ref(), dest], env=e)
        self.assertEqual(doc["manifest_digest"], self.cuda118["digest"], cp.stderr)
        self.assertTrue(os.path.exists(os.path.join(dest, "small.txt")))
        # Only the refused entry's config was fetched, never its 256 KiB layer.
        want = (len(self.cuda124["config"]) + len(self.cuda118["config"]) +
                sum(x["size"] for x in self.cuda118["layers"]))
        self.assertEqual(doc["bytes_downloaded"], want)

    def test_nothing_left_is_exit_3(self):
        _, doc = self.inspect("--features", GPU_FEATURES, tag="only124", check=3)
        self.assertIsNone(doc["chosen"])
        cp = fpull.run(["pull", "--features", GPU_FEATURES, self.ref("only124"),
                        os.path.join(self.tmp, "r")], env=self.env, check=3)
        line = fpull.error_line(cp.stderr)
        self.assertIn(self.cuda124["digest"], line)
        self.assertIn("requires cuda>=12.4", line)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_single_manifest(self):
        images.push_image(
            self.client, self.repo, "single",
            [[{"path": "x", "data": b"x"}]],
            config_extra=env_config("NVIDIA_REQUIRE_CUDA=cuda>=12.4"))
        _, doc = self.inspect("--features", GPU_FEATURES, tag="single", check=3)
        self.assertFalse(doc["entries"][0]["eligible"])
        cp = fpull.run(["pull", "--features", GPU_FEATURES, self.ref("single"),
                        os.path.join(self.tmp, "s")], env=self.env, check=3)
        self.assertIn("requires cuda>=12.4", fpull.error_line(cp.stderr))

    def test_inspect_offline_without_configs(self):
        # Only the index is cached (an inspect without GPU features fetches nothing else):
        # inspect --offline still lists the entries, ranked as the index says.
        self.inspect("--features", "x86-64-v2")
        entries, doc = self.inspect("--offline", "--features", GPU_FEATURES)
        self.assertEqual(doc["chosen"], self.cuda124["digest"])
        # pull --offline cannot decide without the config: not found in the cache (5).
        fpull.run(["pull", "--offline", "--features", GPU_FEATURES, self.ref(),
                   os.path.join(self.tmp, "o")], env=self.env, check=5)
