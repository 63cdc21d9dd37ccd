"""fpull config IMAGE: the image configuration of the entry pull would choose, as the
registry holds it (issue 13.3), against the real registry."""
import json
import os

import cases
import fpull
import images

AMD64 = {"os": "linux", "architecture": "amd64"}


def cfg(env, user=""):
    return {"config": {"Env": env, "Entrypoint": ["/bin/app"], "Cmd": ["--serve"],
                       "WorkingDir": "/srv", "User": user, "Labels": {"kind": env[0]}}}


class ConfigCmd(cases.RegistryCase):
    tmp_prefix = "fpull-config-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        layer = [[{"path": "marker", "type": "file", "data": "x\n"}]]
        self.plain = images.push_image(self.client, "hpc/app", None, layer,
                                       config_extra=cfg(["KIND=plain"]))
        self.gpu = images.push_image(self.client, "hpc/app", None, layer,
                                     config_extra=cfg(["KIND=gpu",
                                                       "LD_LIBRARY_PATH=/usr/local/nvidia/lib64"],
                                                      "1000:1000"))
        images.push_index(self.client, "hpc/app", "v1", [
            (self.plain, dict(AMD64)),
            (self.gpu, dict(AMD64, features=["nvidia-396-44"]))])
        self.ref = "%s/hpc/app:v1" % self.reg.hostport

    def config(self, *args, check=0):
        return fpull.run(["config", "--cache-dir", self.cache] + list(args), check=check)

    def test_prints_the_chosen_entrys_config_bytes(self):
        cp = self.config("--platform", "linux/amd64", self.ref)
        self.assertEqual(cp.stdout.encode(), self.plain["config"] + b"\n")
        cp = self.config("--features", "nvidia-396-44", self.ref)
        self.assertEqual(cp.stdout.encode(), self.gpu["config"] + b"\n")
        doc = json.loads(cp.stdout)
        self.assertIn("LD_LIBRARY_PATH=/usr/local/nvidia/lib64", doc["config"]["Env"])
        self.assertEqual(doc["config"]["User"], "1000:1000")
        # No layer was downloaded for it.
        layer_hex = self.gpu["layers"][0]["digest"].split(":")[1]
        self.assertFalse(os.path.exists(os.path.join(self.cache, "blobs", "sha256", layer_hex)))

    def test_offline_from_the_cache(self):
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, "--features", "nvidia-396-44",
                   self.ref], check=0)
        self.reg.stop()
        cp = self.config("--offline", "--features", "nvidia-396-44", self.ref)
        self.assertEqual(cp.stdout.encode(), self.gpu["config"] + b"\n")

    def test_exit_codes_as_inspect(self):
        cp = self.config("--platform", "linux/arm64", self.ref, check=3)
        self.assertIn("linux/arm64", fpull.error_line(cp.stderr))
        self.assertEqual(cp.stdout, "")
        cp = self.config("%s/hpc/app:nope" % self.reg.hostport, check=5)
        self.assertIn("nope", fpull.error_line(cp.stderr))
        cp = self.config("Bad/Ref", check=2)
        self.assertEqual(cp.stdout, "")
        cp = fpull.run(["config", "--json", self.ref], check=2)
        self.assertIn("--json", fpull.error_line(cp.stderr))
