"""DEST's parent directory must exist, as with tar -C and umoci (issue 34.3): a missing one
is exit 1 naming it, before any request, with nothing created; --parents creates it.
Every output: rootfs, bundle, SquashFS file, OCI layout and archive."""
import os

import cases
import fpull
import images

FILES = [{"path": "etc/x", "type": "file", "data": "x\n"}]


class DestParents(cases.RegistryCase):
    tmp_prefix = "fpull-parents-"
    tools = ("mksquashfs",)

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        images.push_image(self.client, "p/img", "v1", [FILES])
        self.ref = "%s/p/img:v1" % self.reg.hostport

    def test_missing_parent_is_an_error_for_every_output(self):
        cases_ = [([], "rootfs"), (["--format", "bundle"], "bundle"),
                  (["--format", "squashfs"], "img.sqsh"), ([], "oci:%s"),
                  ([], "oci-archive:%s"), ([], "docker-archive:%s")]
        for extra, dest in cases_:
            missing = os.path.join(self.tmp, "no", "such")
            path = os.path.join(missing, "out")
            arg = dest % path if "%s" in dest else os.path.join(missing, dest)
            # An unreachable registry: the check comes before any request (exit 1, not 6).
            cp = fpull.run(["pull", "-q", "--cache-dir", self.cache] + extra +
                           ["127.0.0.1:9/p/img:v1", arg], check=1)
            line = fpull.error_line(cp.stderr)
            self.assertIn(os.path.join(self.tmp, "no", "such") + " does not exist", line)
            self.assertIn("--parents", line)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "no")), arg)
            fpull.run(["pull", "-q", "--parents", "--cache-dir", self.cache] + extra +
                      [self.ref, arg], check=0)
            self.assertTrue(os.path.exists(arg.split(":")[1] if ":" in arg and
                                           not arg.startswith("/") else arg), arg)
            fpull.rmtree(os.path.join(self.tmp, "no"))
