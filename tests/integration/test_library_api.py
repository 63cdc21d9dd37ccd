"""The library as a program uses it, through tests/libapi/libapi.c (issue 12.8):
fpull_inspect needs no cache directory, and verifies what it reads in memory."""
import os
import subprocess
import tempfile
import unittest

import faultproxy
import images
import registry


def libapi():
    build = os.environ.get("FPULL_BUILD_DIR")
    path = os.path.join(build, "tests", "fpull-libapi") if build else None
    if not path or not os.access(path, os.X_OK):
        raise unittest.SkipTest("fpull-libapi not built (FPULL_BUILD_DIR=%s)" % build)
    return path


class LibraryApi(unittest.TestCase):
    def setUp(self):
        self.tool = libapi()
        self.reg = registry.Registry().start()
        self.img = images.push_image(images.Client(self.reg.url), "t/img", "v1",
                                     [[{"path": "f", "data": "x"}]])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.tmp = tempfile.TemporaryDirectory()
        self.home = os.path.join(self.tmp.name, "home")
        os.mkdir(self.home)

    def tearDown(self):
        self.proxy.stop()
        self.reg.stop()
        self.tmp.cleanup()

    def inspect(self, hostport):
        env = {k: v for k, v in os.environ.items()
               if k not in ("FPULL_CACHE", "XDG_CACHE_HOME", "http_proxy", "https_proxy")}
        env.update({"HOME": self.home, "FPULL_RETRY_BASE_MS": "1"})
        return subprocess.run([self.tool, "inspect", hostport + "/t/img:v1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120)

    def test_inspect_without_a_cache_directory(self):
        r = self.inspect(self.reg.hostport)
        self.assertEqual(r.returncode, 0, r.stderr)
        # A single-platform image: its config blob was read (in memory) to show its platform.
        self.assertEqual(r.stdout.strip(), "chosen " + self.img["digest"])
        self.assertIn("/blobs/" + self.img["config_digest"], r.stderr)
        self.assertNotIn("cache", r.stderr)
        self.assertEqual(os.listdir(self.home), [])

    def test_inspect_without_a_cache_verifies_the_config(self):
        self.proxy.add(r"/blobs/", replace_body=lambda body: body.replace(b"amd64", b"arm64"))
        r = self.inspect(self.proxy.hostport)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn(self.img["config_digest"], r.stderr)
        self.assertNotIn("chosen", r.stdout)


if __name__ == "__main__":
    unittest.main()
