"""A document named by its digest comes from the cache when the cache holds it, online too:
a job's nodes pulling its pinned index (IMAGE@INDEX-DIGEST) ask the registry for nothing
once one node or an earlier step cached it, and a pull by tag asks only for the tag
(issue 41.2). Against the real registry behind a counting proxy."""
import os

import cases
import faultproxy
import fpull
import images

FILES = [{"path": "etc/x", "type": "file", "data": "x\n"}]


class PinnedDigest(cases.RegistryCase):
    tmp_prefix = "fpull-pinned-"

    def setUp(self):
        super().setUp()
        amd = images.push_image(self.client, "pin/img", None, [FILES], architecture="amd64")
        arm = images.push_image(self.client, "pin/img", None, [FILES],
                                architecture="arm64", variant="v8")
        self.index = images.push_index(self.client, "pin/img", "v1", [
            (amd, {"os": "linux", "architecture": "amd64"}),
            (arm, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        self.amd = amd
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}

    def pull(self, ref, dest, check=0):
        return fpull.run_json(["pull", "--platform", "linux/amd64", ref,
                               os.path.join(self.tmp, dest)], env=self.env, check=check)

    def test_pinned_index_costs_the_registry_nothing_once_cached(self):
        pinned = "%s/pin/img@%s" % (self.proxy.hostport, self.index["digest"])
        cp, doc = self.pull(pinned, "a")
        self.assertEqual(doc["index_digest"], self.index["digest"])
        self.assertEqual(doc["manifest_digest"], self.amd["digest"])
        self.assertGreater(self.proxy.count("/manifests/"), 0)
        self.proxy.clear()
        # Every further node or step: not even the ping.
        cp, doc = self.pull(pinned, "b")
        self.assertEqual(doc["manifest_digest"], self.amd["digest"])
        self.assertEqual(self.proxy.matching(""), [], cp.stderr)
        with open(os.path.join(self.tmp, "b", "etc", "x")) as f:
            self.assertEqual(f.read(), "x\n")

    def test_by_tag_asks_for_the_tag_only(self):
        ref = "%s/pin/img:v1" % self.proxy.hostport
        self.pull(ref, "a")
        self.proxy.clear()
        self.pull(ref, "b")
        self.assertEqual([r["path"] for r in self.proxy.matching("/manifests/")],
                         ["/v2/pin/img/manifests/v1"])
        self.assertEqual(self.proxy.count("/blobs/"), 0)

    def test_tag_pinned_to_a_digest_is_recorded_for_offline(self):
        # NAME:TAG@DIGEST from the registry: TAG names DIGEST offline after, as a pull by
        # the tag would have recorded (a Slurm node's fallback when the registry fails).
        ref = "%s/pin/img:v1" % self.proxy.hostport
        cp = fpull.run(["pull", "--offline", "--platform", "linux/amd64", ref,
                        os.path.join(self.tmp, "x")], env=self.env)
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.pull("%s@%s" % (ref, self.index["digest"]), "a")
        cp, doc = fpull.run_json(["pull", "--offline", "--platform", "linux/amd64", ref,
                                  os.path.join(self.tmp, "b")], env=self.env)
        self.assertEqual(doc["index_digest"], self.index["digest"])

    def test_a_damaged_cached_manifest_is_fetched_again(self):
        pinned = "%s/pin/img@%s" % (self.proxy.hostport, self.index["digest"])
        self.pull(pinned, "a")
        path = os.path.join(self.tmp, "cache", "blobs", "sha256", self.amd["digest"][7:])
        os.chmod(path, 0o644)
        with open(path, "r+b") as f:
            data = f.read()
            f.seek(0)
            f.write(data.replace(b"{", b" ", 1))
        self.proxy.clear()
        cp, doc = self.pull(pinned, "b")
        self.assertEqual(doc["manifest_digest"], self.amd["digest"])
        self.assertEqual([r["path"] for r in self.proxy.matching("/manifests/")],
                         ["/v2/pin/img/manifests/" + self.amd["digest"]])


if __name__ == "__main__":
    import unittest
    unittest.main()
