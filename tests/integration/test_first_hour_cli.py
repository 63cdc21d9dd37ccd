"""The first hour, round 2 (issue 43): what users of skopeo, crane, regctl, docker and cosign
trip over, typed as they type it: a plain-HTTP registry under a host name, flags given
values, other tools' option names and typos, regctl's two-word commands, --platform ARCH,
the no-fit message, and the small things."""
import os

import cases
import faultproxy
import fpull
import images

NAME = "lab.fpull.test"


def layer(name):
    return [{"path": name, "type": "file", "data": name + "\n"}]


class PlainHttpByName(cases.RegistryCase):
    """Item 1: a plain-HTTP registry under a name that is not literally loopback."""
    tmp_prefix = "fpull-43-http-"

    def setUp(self):
        super().setUp()
        images.push_image(self.client, "lab/img", "v1", [layer("a")])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        self.ref = "%s:%d/lab/img:v1" % (NAME, self.proxy.port)
        self.env = {"FPULL_RESOLVE": "%s:%d:127.0.0.1" % (NAME, self.proxy.port),
                    "FPULL_CACHE": os.path.join(self.tmp, "cache")}

    def test_said_at_once_with_the_way_to_allow_it(self):
        for argv in (["pull", self.ref, os.path.join(self.tmp, "r")],
                     ["inspect", self.ref], ["tags", self.ref.rsplit(":", 1)[0]]):
            self.proxy.clear()
            before = self.proxy.connections
            cp = fpull.run(argv, env=self.env)
            self.assertEqual(cp.returncode, 2, cp.stderr)
            line = fpull.error_line(cp.stderr)
            self.assertIn("%s:%d speaks plain HTTP, not HTTPS" % (NAME, self.proxy.port), line)
            self.assertIn("--insecure", line)
            self.assertIn("insecure-registries", line)
            self.assertNotRegex(line, r"\(\d+ tries\)")
            # One TLS handshake and one plain GET of /v2/ that tells it speaks HTTP: no
            # retries (five handshakes and 7 s before).
            self.assertEqual(self.proxy.connections - before, 2, argv)
            self.assertEqual([r["path"] for r in self.proxy.requests], ["/v2/"])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_insecure_and_the_config_allow_it(self):
        fpull.run(["pull", "-q", "--insecure", self.ref, os.path.join(self.tmp, "r1")],
                  env=self.env, check=0)
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write('insecure-registries: ["%s:%d"]\n' % (NAME, self.proxy.port))
        fpull.run(["pull", "-q", self.ref, os.path.join(self.tmp, "r2")],
                  env=dict(self.env, FPULL_CONFIG=cfg), check=0)
        for d in ("r1", "r2"):
            with open(os.path.join(self.tmp, d, "a")) as f:
                self.assertEqual(f.read(), "a\n")
