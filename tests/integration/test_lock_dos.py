"""Lock denial of service (issue 20.4, contract "Caches shared between users and nodes"):
a user who can merely read a cache holds a read lock on a lock file left in CACHE/locks/
(a killed fetch's, mode 0644 as older fpull made them); another user's pull of that blob
from the real registry must still complete: the wait for the lock is bounded
(FPULL_LOCK_WAIT, 1 s here) and the blob is then fetched into a private partial. As root
against uid 65534, and as uid 65534 against uid 4242."""
import os
import subprocess
import sys

import cases
import fpull
import images

NOBODY = 65534
OTHER = 4242

HOLDER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.lockf(fd, fcntl.LOCK_SH)
print("locked", flush=True)
sys.stdin.read()
"""


def become(uid):
    def fn():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return fn


class LockDos(cases.RegistryCase):
    tmp_prefix = "fpull-lockdos-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.fail("needs root to act as other users (scripts/test runs as root)")
        os.chmod(self.tmp, 0o755)
        self.entries = [{"path": "data", "type": "file", "data": os.urandom(300000)}]
        self.img = images.push_image(self.client, "lib/app", "v1", [self.entries])

    def run_as(self, uid, args, env):
        home = os.path.join(self.tmp, "home-%d" % uid)
        if not os.path.isdir(home):
            os.mkdir(home, 0o700)
            os.chown(home, uid, uid)
        e = fpull.base_env(dict({"HOME": home, "XDG_CONFIG_HOME": None, "XDG_CACHE_HOME": None,
                                 "XDG_RUNTIME_DIR": None, "FPULL_CACHE": None}, **env))
        return subprocess.run([fpull.binary()] + args, env=e, cwd=home,
                              preexec_fn=become(uid) if uid else None, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=90)

    def check(self, victim, attacker):
        cache = os.path.join(self.tmp, "cache")
        os.mkdir(cache, 0o755)
        os.chown(cache, victim, victim)
        # A leftover lock file for the layer, readable by everyone.
        locks = os.path.join(cache, "locks")
        os.mkdir(locks, 0o755)
        os.chown(locks, victim, victim)
        lock = os.path.join(locks, self.img["layers"][0]["digest"].split(":")[1] + ".lock")
        with open(lock, "w"):
            pass
        os.chmod(lock, 0o644)
        os.chown(lock, victim, victim)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, lock],
                                  preexec_fn=become(attacker), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.stdin.close)
        self.assertEqual(holder.stdout.readline().strip(), "locked")
        dest = os.path.join(self.tmp, "home-%d" % victim, "rootfs")
        cp = self.run_as(victim, ["pull", "-q", "--cache-dir", cache,
                                  "%s/lib/app:v1" % self.reg.hostport, dest],
                         {"FPULL_LOCK_WAIT": "1"})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("downloading it separately", cp.stderr)
        with open(os.path.join(dest, "data"), "rb") as f:
            self.assertEqual(f.read(), self.entries[0]["data"])
        # Only the reader's leftover is in locks/; no partial stays behind (verified/ holds
        # the victim's records of the blobs it checked).
        self.assertEqual(os.listdir(locks), [os.path.basename(lock)])
        priv = os.path.join(cache, "tmp", "u%d" % victim)
        self.assertEqual([n for n in os.listdir(priv) if n != "verified"], [])

    def test_reader_lock_does_not_block_root(self):
        self.check(0, NOBODY)

    def test_reader_lock_does_not_block_an_unprivileged_user(self):
        self.check(NOBODY, OTHER)
