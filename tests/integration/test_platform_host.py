"""--platform OS/ARCH[/VARIANT] without features on the host's own architecture constrains the
detected features, it does not erase them (issue 33, contract v5), against the real registry.
The host is pinned with FPULL_CPUID_FILE (an x86-64-v4 Genoa) so that the answer does not
depend on the machine; on other architectures there is nothing to pin, so it is skipped."""
import os
import platform
import unittest

import cases
import fpull
import images

SRC = os.environ.get("FPULL_SRC_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
GENOA = os.path.join(SRC, "tests", "fixtures", "cpuid", "zen4-epyc-9004.txt")
AMD64 = {"os": "linux", "architecture": "amd64"}


@unittest.skipUnless(platform.machine() in ("x86_64", "AMD64"), "needs an amd64 host")
class PlatformOnHost(cases.RegistryCase):
    tmp_prefix = "fpull-platform-host-"

    def setUp(self):
        super().setUp()
        self.digests = {}
        entries = []
        for name, plat in (("base", dict(AMD64)),
                           ("v3", dict(AMD64, variant="v3", features=["x86-64-v3"])),
                           ("v4", dict(AMD64, variant="v4", features=["x86-64-v4"]))):
            img = images.push_image(self.client, "host/app", None,
                                    [[{"path": "marker", "data": name + "\n"}]])
            self.digests[name] = img["digest"]
            entries.append((img, plat))
        images.push_index(self.client, "host/app", "v1", entries)
        self.ref = "%s/host/app:v1" % self.reg.hostport
        self.env = {"FPULL_CPUID_FILE": GENOA,
                    "FPULL_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
                    "FPULL_NVIDIA_PROC_VERSION": "/nonexistent/version"}

    def pull(self, *opts):
        dest = os.path.join(self.tmp, "out-%d" % len(os.listdir(self.tmp)))
        cp = fpull.run(["pull", "--cache-dir", os.path.join(self.tmp, "cache")] + list(opts)
                       + [self.ref, dest], env=self.env, check=0)
        with open(os.path.join(dest, "marker")) as f:
            return cp, f.read().strip()

    def test_platform_keeps_detected_features(self):
        # Before issue 33 --platform linux/amd64 dropped every detected feature: the baseline.
        cp, got = self.pull("--platform", "linux/amd64")
        self.assertEqual(got, "v4")
        self.assertNotIn("note:", cp.stderr)

    def test_variant_constrains_and_notes_the_difference(self):
        cp, got = self.pull("--platform", "linux/amd64/v3")
        self.assertEqual(got, "v3")
        self.assertIn("note: ", cp.stderr)
        self.assertIn("would choose %s" % self.digests["v4"], cp.stderr)
        cp, got = self.pull("--platform", "linux/amd64/v2")
        self.assertEqual(got, "base")

    def test_features_given_still_replace(self):
        cp, got = self.pull("--platform", "linux/amd64:x86-64-v3")
        self.assertEqual(got, "v3")
        cp, got = self.pull("--platform", "linux/amd64", "--features", "x86-64-v2")
        self.assertEqual(got, "base")
        self.assertNotIn("note:", cp.stderr)
