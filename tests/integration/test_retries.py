"""How often fpull tries, and that its last line says so (issue 12.4): a host name that
does not resolve fails at once, and so does a refused connection (issue 41), a failure after retries ends with "(N tries)". Attempts
are counted from the requests themselves (the -v log, the proxy), never from the clock."""
import os
import re
import tempfile
import unittest

import faultproxy
import fpull
import images
import registry

# RFC 6761: .invalid names resolve nowhere, with or without a network.
NOWHERE = "fpull-test.invalid"
FAST = {"FPULL_RETRY_BASE_MS": "1"}  # backoff of a few ms: the count is what is checked


class Retries(unittest.TestCase):
    def setUp(self):
        self.reg = registry.Registry().start()
        images.push_image(images.Client(self.reg.url), "t/img", "v1",
                          [[{"path": "f", "data": "x"}]])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.proxy.stop()
        self.reg.stop()
        self.tmp.cleanup()

    def test_unresolvable_name_is_tried_once(self):
        for cmd in (["inspect", "-v"], ["pull", "-v"]):
            dest = os.path.join(self.tmp.name, "out")
            args = cmd + [NOWHERE + "/t/img:v1"] + (["-o", dest] if cmd[0] == "pull" else [])
            r = fpull.run(args, env=FAST)
            self.assertEqual(r.returncode, 6, r.stderr)
            self.assertTrue(fpull.error_line(r.stderr).endswith(
                ": could not resolve %s (no network?)" % NOWHERE), r.stderr)
            sent = re.findall(r"^GET https?://%s/v2/$" % re.escape(NOWHERE), r.stderr, re.M)
            self.assertEqual(len(sent), 1, r.stderr)
            self.assertNotIn("retrying", r.stderr)
            self.assertFalse(os.path.exists(dest))

    def test_refused_connection_is_tried_once(self):
        # Issue 41: nothing listens on the port; trying again seconds later changes nothing
        # and delayed a Slurm step's cached image by the backoff.
        port = registry.free_port()
        host = "127.0.0.1:%d" % port
        r = fpull.run(["inspect", "-v", host + "/t/img:v1"], env=FAST)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("cannot reach registry %s" % host, fpull.error_line(r.stderr))
        self.assertNotIn("tries)", fpull.error_line(r.stderr))
        sent = re.findall(r"^GET https?://%s/v2/$" % re.escape(host), r.stderr, re.M)
        # One try: https, then http for a loopback registry.
        self.assertLessEqual(len(sent), 2, r.stderr)
        self.assertGreaterEqual(len(sent), 1, r.stderr)
        self.assertNotIn("retrying", r.stderr)

    def test_persistent_503_ends_with_the_number_of_tries(self):
        self.proxy.add(r"/manifests/", status=503)
        ref = self.proxy.hostport + "/t/img:v1"
        r = fpull.run(["inspect", ref], env=FAST)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertRegex(fpull.error_line(r.stderr), r"answered HTTP 503 .* \(5 tries\)$")
        self.assertEqual(self.proxy.count("/manifests/v1"), 5)

    def test_configured_retries_are_what_the_message_counts(self):
        cfg = os.path.join(self.tmp.name, "config.yaml")
        with open(cfg, "w") as f:
            f.write("retries: 2\n")
        self.proxy.add(r"/manifests/", status=503)
        r = fpull.run(["inspect", self.proxy.hostport + "/t/img:v1"],
                      env=dict(FAST, FPULL_CONFIG=cfg))
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertTrue(fpull.error_line(r.stderr).endswith(" (2 tries)"), r.stderr)
        self.assertEqual(self.proxy.count("/manifests/v1"), 2)

    def test_unreachable_registry_ends_with_the_number_of_tries(self):
        self.proxy.add(r"^/v2/$", status=503)
        r = fpull.run(["inspect", self.proxy.hostport + "/t/img:v1"], env=FAST)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertTrue(fpull.error_line(r.stderr).endswith(" (5 tries)"), r.stderr)


if __name__ == "__main__":
    unittest.main()
