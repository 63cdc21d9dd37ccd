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


@unittest.skipUnless(platform.machine() in ("x86_64", "AMD64"), "FPULL_CPUID_FILE is x86 only")
class CloudVmChoice(cases.RegistryCase):
    """Issue 33's cloud VMs, pinned with their CPUID fixtures: a Genoa VM that hides MWAITX
    gets the znver4 build, not icelake-server's (it got exit 3 for znver-only indexes and the
    icelake-server entry otherwise); a Sapphire Rapids VM that hides PTWRITE and WAITPKG (the
    H200 node) gets the sapphirerapids build."""

    tmp_prefix = "fpull-cloud-vm-"

    def choose(self, fixture, tags):
        entries, digests = [], {}
        for tag in tags:
            img = images.push_image(self.client, "vm/app", None,
                                    [[{"path": "marker", "data": tag + "\n"}]])
            digests[img["digest"]] = tag
            entries.append((img, dict(AMD64, features=[tag])))
        images.push_index(self.client, "vm/app", fixture, entries)
        env = {"FPULL_CPUID_FILE": os.path.join(SRC, "tests", "fixtures", "cpuid",
                                                fixture + ".txt"),
               "FPULL_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
               "FPULL_NVIDIA_PROC_VERSION": "/nonexistent/version"}
        _, doc = fpull.run_json(["inspect", "--cache-dir", os.path.join(self.tmp, "c"),
                                 "%s/vm/app:%s" % (self.reg.hostport, fixture)], env=env)
        return digests[doc["chosen"]]

    def test_genoa_vm_gets_znver4(self):
        self.assertEqual(self.choose("genoa-vm", ["icelake-server", "znver4", "znver3"]),
                         "znver4")
        self.assertEqual(self.choose("milan-vm", ["haswell", "znver3"]), "znver3")

    def test_sapphire_rapids_vm_gets_sapphirerapids(self):
        self.assertEqual(self.choose("sapphirerapids-vm", ["icelake-server", "sapphirerapids"]),
                         "sapphirerapids")
