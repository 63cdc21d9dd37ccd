"""Shared caches between users (issue 13.2): a read-only cache root fills with prefetch
--all and that another user pulls --offline from without writing there; a group-shared
writable cache used by two users at once; the modes of new cache roots. Two real uids
(root and 65534, plus 4242 for the group case), the real registry."""
import hashlib
import json
import os
import stat
import subprocess

import cases
import fpull
import images

NOBODY = 65534
OTHER = 4242
GROUP = 4343
AMD64 = {"os": "linux", "architecture": "amd64"}


def marker(text):
    return [{"path": "marker", "type": "file", "data": text + "\n"},
            {"path": "data/" + text, "type": "file", "data": os.urandom(20000)}]


def become(uid, gid, groups=(), umask=0o022):
    def fn():
        os.setgroups(list(groups))
        os.setgid(gid)
        os.setuid(uid)
        os.umask(umask)
    return fn


def snapshot(root):
    """Every path under ROOT with its type, mode, owner, size, inode and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames + ([""] if dirpath == root else []):
            p = os.path.join(dirpath, name)
            s = os.lstat(p)
            out[os.path.relpath(p, root)] = (stat.S_IFMT(s.st_mode), s.st_mode, s.st_uid,
                                             s.st_size, s.st_ino, s.st_mtime_ns)
    return out


class SharedCache(cases.RegistryCase):
    tmp_prefix = "fpull-shared-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.fail("needs root to act as a second user (scripts/test runs as root)")
        os.chmod(self.tmp, 0o755)
        c = self.client
        self.plain = images.push_image(c, "hpc/app", None, [marker("plain")])
        self.gpu = images.push_image(c, "hpc/app", None, [marker("gpu")])
        images.push_index(c, "hpc/app", "v1", [
            (self.plain, dict(AMD64)),
            (self.gpu, dict(AMD64, features=["nvidia-396-44"]))])
        self.ref = "%s/hpc/app:v1" % self.reg.hostport
        self.shared = os.path.join(self.tmp, "sw", "fpull-cache")

    def home_of(self, uid, gid=None):
        home = os.path.join(self.tmp, "home-%d" % uid)
        if not os.path.isdir(home):
            os.mkdir(home, 0o700)
            os.chown(home, uid, uid if gid is None else gid)
        return home

    def run_as(self, uid, args, env=None, gid=None, groups=(), umask=0o022, wait=True):
        home = self.home_of(uid, gid)
        e = fpull.base_env(dict({"HOME": home, "XDG_CONFIG_HOME": None, "XDG_CACHE_HOME": None,
                                 "XDG_RUNTIME_DIR": None, "FPULL_CACHE": None}, **(env or {})))
        p = subprocess.Popen([fpull.binary()] + args, env=e, cwd=home,
                             preexec_fn=become(uid, uid if gid is None else gid, groups, umask),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p.communicate(timeout=120) + (p.returncode,) if wait else p

    def root_fill(self):
        cp = fpull.run(["prefetch", "-q", "--all", "--cache-dir", self.shared, self.ref],
                       env={"FPULL_CACHE": None})
        self.assertEqual(cp.returncode, 0, cp.stderr)

    def test_nobody_pulls_offline_from_roots_shared_cache_without_writing_there(self):
        self.root_fill()
        # Made by root for others: reachable by them (the umask's 0755, not 0700).
        self.assertEqual(stat.S_IMODE(os.stat(self.shared).st_mode), 0o755)
        before = snapshot(self.shared)
        self.reg.stop()
        home = self.home_of(NOBODY)
        env = {"FPULL_SHARED_CACHES": "/nonexistent/cache:" + self.shared}
        for features, want in (("nvidia-396-44", "gpu"), ("", "plain")):
            dest = os.path.join(home, "root-" + want)
            args = ["pull", "--json", "--offline", self.ref, dest]
            args[1:1] = ["--features", features] if features else ["--platform", "linux/amd64"]
            out, err, rc = self.run_as(NOBODY, args, env=env)
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["bytes_downloaded"], 0)
            with open(os.path.join(dest, "marker")) as f:
                self.assertEqual(f.read(), want + "\n")
        self.assertEqual(snapshot(self.shared), before)
        # Root's blobs were used in place: nothing was copied into nobody's own cache.
        own = os.path.join(home, ".cache", "fpull", "blobs", "sha256")
        self.assertEqual(os.listdir(own), [])

    def test_shared_caches_from_the_config_file(self):
        self.root_fill()
        self.reg.stop()
        home = self.home_of(NOBODY)
        conf = os.path.join(home, "config.yaml")
        with open(conf, "w") as f:
            f.write("shared-caches: [%s]\n" % self.shared)
        os.chmod(conf, 0o644)
        out, err, rc = self.run_as(NOBODY, ["pull", "-q", "--offline", "--config", conf,
                                            "--platform", "linux/amd64", self.ref,
                                            os.path.join(home, "r")])
        self.assertEqual(rc, 0, err)
        # Without it the cache is not searched: not in the cache, exit 5.
        out, err, rc = self.run_as(NOBODY, ["pull", "-q", "--offline", "--platform",
                                            "linux/amd64", self.ref, os.path.join(home, "r2")])
        self.assertEqual(rc, 5, err)

    def test_a_tag_record_someone_else_could_write_is_not_used(self):
        self.root_fill()
        self.reg.stop()
        name = hashlib.sha256(self.ref.encode()).hexdigest() + ".u0.json"
        os.chown(os.path.join(self.shared, "tags", name), 1000, 1000)
        home = self.home_of(NOBODY)
        out, err, rc = self.run_as(NOBODY, ["pull", "--offline", "--platform", "linux/amd64",
                                            self.ref, os.path.join(home, "r")],
                                   env={"FPULL_SHARED_CACHES": self.shared})
        self.assertEqual(rc, 5, err)
        self.assertIn("ignoring the tag record", err)
        self.assertFalse(os.path.exists(os.path.join(home, "r")))

    def test_group_shared_writable_cache_for_two_users_at_once(self):
        cache = os.path.join(self.tmp, "group-cache")
        os.mkdir(cache)
        os.chown(cache, 0, GROUP)
        os.chmod(cache, 0o2775)
        procs = []
        for uid in (NOBODY, OTHER):
            dest = os.path.join(self.home_of(uid, GROUP), "rootfs")
            procs.append((uid, self.run_as(uid, ["pull", "-q", "--cache-dir", cache,
                                                 "--features", "nvidia-396-44", self.ref, dest],
                                           gid=GROUP, groups=[GROUP], umask=0o002,
                                           wait=False)))
        for uid, p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, "uid %d: %s" % (uid, err))
            with open(os.path.join(self.home_of(uid, GROUP), "rootfs", "marker")) as f:
                self.assertEqual(f.read(), "gpu\n")
        # Each blob was fetched once for both.
        gets = {}
        with open(self.reg.log_path) as f:
            for line in f:
                if '"GET /v2/hpc/app/blobs/' in line:
                    d = line.split("/blobs/")[1].split(" ")[0]
                    gets[d] = gets.get(d, 0) + 1
        self.assertEqual(gets.get(self.gpu["layers"][0]["digest"]), 1, gets)
        # The layout is the group's: setgid and group-writable directories.
        for sub in ("blobs", "blobs/sha256", "locks", "tags", "tmp"):
            st = os.stat(os.path.join(cache, sub))
            self.assertEqual(st.st_gid, GROUP, sub)
            self.assertEqual(stat.S_IMODE(st.st_mode) & 0o2070, 0o2070, sub)

    def test_default_cache_stays_private(self):
        home = self.home_of(NOBODY)
        out, err, rc = self.run_as(NOBODY, ["prefetch", "-q", self.ref])
        self.assertEqual(rc, 0, err)
        default = os.path.join(home, ".cache", "fpull")
        self.assertEqual(stat.S_IMODE(os.stat(default).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(default, "blobs")).st_mode), 0o700)
