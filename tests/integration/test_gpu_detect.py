"""Which GPUs count (contract v3, issue 15 items 5 and 8), through `fpull inspect --json`
against the real registry: the stand-in libnvidia-ml.so.1 and libcuda.so.1 the tests build
(tests/nvml) play the driver, recorded KFD trees (tests/fixtures/kfd) the AMD kernel."""
import os

import fpull
import images
from cases import RegistryCase

SRC = os.environ["FPULL_SRC_DIR"]
BUILD = os.environ["FPULL_BUILD_DIR"]
FAKE_NVML = os.path.join(BUILD, "tests", "nvml", "full", "libnvidia-ml.so.1")
FAKE_CUDA = os.path.join(BUILD, "tests", "nvml", "cuda", "libcuda.so.1")
KFD = os.path.join(SRC, "tests", "fixtures", "kfd")


class GpuDetect(RegistryCase):
    def setUp(self):
        super().setUp()
        self.repo = "gpu/app"
        plat = {"os": "linux", "architecture": "amd64"}
        self.sm90 = images.push_image(self.client, self.repo, None,
                                      [[{"path": "sm90", "data": b"9.0\n"}]])
        self.gfx90a = images.push_image(self.client, self.repo, None,
                                        [[{"path": "gfx90a", "data": b"gfx90a\n"}]])
        self.generic = images.push_image(self.client, self.repo, None,
                                         [[{"path": "generic", "data": b"cpu\n"}]])
        images.push_index(self.client, self.repo, "latest", [
            (self.sm90, dict(plat, features=["nv-compute-9-0"])),
            (self.gfx90a, dict(plat, features=["amdgpu-gfx90a"])),
            (self.generic, dict(plat)),
        ])
        self.ref = "%s/%s:latest" % (self.reg.hostport, self.repo)

    def inspect(self, **env):
        e = {"FPULL_CACHE": os.path.join(self.tmp, "cache"),
             "FPULL_NVML_LIBRARY": FAKE_NVML,
             "FPULL_CUDA_LIBRARY": os.path.join(self.tmp, "no-libcuda.so.1"),
             "FPULL_NVIDIA_PROC_VERSION": os.path.join(self.tmp, "no-version"),
             "FPULL_SYSFS_ROOT": os.path.join(KFD, "cpuonly"),
             "FAKE_NVML_DRIVER": "550.54.14", "FAKE_NVML_CUDA": "12040",
             "CUDA_VISIBLE_DEVICES": None, "NVIDIA_VISIBLE_DEVICES": None}
        e.update(env)
        _, doc = fpull.run_json(["inspect", self.ref], env=e)
        return doc

    def chosen(self, **env):
        doc = self.inspect(**env)
        return doc["chosen"], doc["target"]["features"]

    def test_denied_gpu_is_skipped(self):
        # Four H100s, one in another job's cgroup: still nv-compute-9-0.
        chosen, features = self.chosen(FAKE_NVML_GPUS="9.0,9.0,9.0,9.0", FAKE_NVML_DENIED="1")
        self.assertIn("nv-compute-9-0", features)
        self.assertEqual(chosen, self.sm90["digest"])

    def test_cuda_visible_devices_index_and_uuid(self):
        # A V100 (7.0) beside an H100: nothing common until the job names the H100.
        chosen, features = self.chosen(FAKE_NVML_GPUS="7.0,9.0")
        self.assertNotIn("nv-compute-9-0", features)
        self.assertEqual(chosen, self.generic["digest"])
        chosen, _ = self.chosen(FAKE_NVML_GPUS="7.0,9.0", CUDA_VISIBLE_DEVICES="1")
        self.assertEqual(chosen, self.sm90["digest"])
        chosen, _ = self.chosen(FAKE_NVML_GPUS="7.0,9.0",
                                CUDA_VISIBLE_DEVICES="GPU-fa4e0000-0000-4000-8000-000000000001")
        self.assertEqual(chosen, self.sm90["digest"])
        chosen, _ = self.chosen(FAKE_NVML_GPUS="7.0,9.0", NVIDIA_VISIBLE_DEVICES="1")
        self.assertEqual(chosen, self.sm90["digest"])
        # The index counts the GPUs the job may open: GPU 0 denied, index 0 is the H100.
        chosen, _ = self.chosen(FAKE_NVML_GPUS="7.0,9.0,7.0", FAKE_NVML_DENIED="0",
                                CUDA_VISIBLE_DEVICES="0")
        self.assertEqual(chosen, self.sm90["digest"])

    def test_mig_instance_counts_as_parent(self):
        chosen, features = self.chosen(
            FAKE_NVML_GPUS="7.0,9.0", FAKE_NVML_MIG="1",
            CUDA_VISIBLE_DEVICES="MIG-fa4e0000-0000-4000-8000-000000000011")
        self.assertIn("nv-compute-9-0", features)
        self.assertEqual(chosen, self.sm90["digest"])

    def test_libcuda_only_container(self):
        chosen, features = self.chosen(
            FPULL_NVML_LIBRARY=os.path.join(self.tmp, "no-libnvidia-ml.so.1"),
            FPULL_CUDA_LIBRARY=FAKE_CUDA, FAKE_CUDA_GPUS="9.0,9.0", FAKE_CUDA_VERSION="12080")
        self.assertIn("nv-compute-9-0", features)
        self.assertIn("cuda-12-8", features)
        self.assertEqual(chosen, self.sm90["digest"])

    def test_amd_gpus(self):
        for tree, want in (("mi250x", self.gfx90a), ("mi300a", self.generic),
                           ("mixed", self.generic)):
            chosen, features = self.chosen(FPULL_SYSFS_ROOT=os.path.join(KFD, tree),
                                           FAKE_NVML_GPUS="")
            self.assertEqual(chosen, want["digest"], (tree, features))
        _, doc = fpull.run_json(["features"], env={
            "FPULL_SYSFS_ROOT": os.path.join(KFD, "mi300a"),
            "FPULL_NVML_LIBRARY": os.path.join(self.tmp, "no-libnvidia-ml.so.1"),
            "FPULL_CUDA_LIBRARY": os.path.join(self.tmp, "no-libcuda.so.1")})
        self.assertEqual(doc["sources"].get("amdgpu-gfx942"), "amdgpu", doc)
