"""Partial-download poisoning (issue 20.3, contract "Caches shared between users and
nodes"): a registry that serves garbage for half of a public layer and then drops the
connection leaves a partial download behind; the next pull of the real image from the real
registry resumes it, fails verification, and must then fetch the blob once more from byte 0
instead of failing with exit 7. As root and as an unprivileged user (65534), each with the
partial of their own (tmp/uUID)."""
import os
import subprocess

import cases
import faultproxy
import fpull
import images

NOBODY = 65534
CONTENT = os.urandom(1024 * 1024)


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def garbage(body):
    return bytes(b ^ 0x5A for b in body)


class PartialPoisoning(cases.RegistryCase):
    tmp_prefix = "fpull-poison-"

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.entries = [{"path": "big", "type": "file", "data": CONTENT}]
        self.img = images.push_image(self.client, "pub/app", "v1", [self.entries],
                                     compression=None)
        self.layer = self.img["layers"][0]
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        # The bad source: half the layer in garbage, then the connection closes; resuming
        # there gets nothing at all.
        path = "/blobs/" + self.layer["digest"]
        self.proxy.add(path, range_only=False, replace_body=garbage,
                       cut_after=self.layer["size"] // 2)
        self.proxy.add(path, range_only=True, reset_after=0)

    def pull(self, host, cache, dest, uid):
        env = {"FPULL_CACHE": None, "FPULL_RETRY_BASE_MS": "10"}
        if uid:
            home = os.path.join(self.tmp, "home")
            if not os.path.isdir(home):
                os.mkdir(home, 0o700)
                os.chown(home, uid, uid)
            env.update({"HOME": home, "XDG_CONFIG_HOME": None, "XDG_CACHE_HOME": None,
                        "XDG_RUNTIME_DIR": None})
        return subprocess.run([fpull.binary(), "pull", "-q", "--cache-dir", cache,
                               "%s/pub/app:v1" % host, dest], env=fpull.base_env(env),
                              preexec_fn=as_nobody if uid else None, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)

    def check(self, uid):
        cache = os.path.join(self.tmp, "cache")
        os.mkdir(cache, 0o755)
        os.chown(cache, uid, uid)
        work = os.path.join(self.tmp, "work")
        os.mkdir(work, 0o755)
        os.chown(work, uid, uid)
        bad = self.pull(self.proxy.hostport, cache, os.path.join(work, "bad"), uid)
        self.assertNotEqual(bad.returncode, 0, bad.stderr)
        partial = os.path.join(cache, "tmp", "u%d" % uid,
                               self.layer["digest"].split(":")[1] + ".partial")
        self.assertEqual(os.path.getsize(partial), self.layer["size"] // 2)
        # The real image from the real registry: same layer digest, good bytes.
        good = self.pull(self.reg.hostport, cache, os.path.join(work, "good"), uid)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertIn("did not verify", good.stderr)
        with open(os.path.join(work, "good", "big"), "rb") as f:
            self.assertEqual(f.read(), CONTENT)
        self.assertFalse(os.path.exists(partial))
        blob = os.path.join(cache, "blobs", "sha256", self.layer["digest"].split(":")[1])
        self.assertEqual(os.path.getsize(blob), self.layer["size"])

    def test_poisoned_partial_is_refetched_from_zero_as_root(self):
        if os.geteuid() != 0:
            self.fail("needs root (scripts/test runs as root)")
        self.check(0)

    def test_poisoned_partial_is_refetched_from_zero_as_unprivileged_user(self):
        if os.geteuid() != 0:
            self.fail("needs root to act as uid 65534 (scripts/test runs as root)")
        self.check(NOBODY)
