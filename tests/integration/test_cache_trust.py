"""The cache trust model against a hostile second user (issue 11.3, man fpull SECURITY).

A sticky (1777) cache root shared by root and uid 65534 ("mallory" below), the real
registry holding two images: r/good (/marker = good) and r/evil (/marker = evil). Mallory
owns whatever she created in the cache and plants symlinks, FIFOs, forged tag records and
directories of her own; no pull by root may unpack content it did not verify, use a record
it did not write, hang, or write outside the cache."""
import hashlib
import json
import os
import subprocess
import unittest

import cases
import fpull
import images

NOBODY = 65534


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class CacheTrust(cases.RegistryCase):
    tmp_prefix = "fpull-trust-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.fail("needs root to act as a second user (scripts/test runs as root)")
        os.chmod(self.tmp, 0o755)
        self.cache = os.path.join(self.tmp, "shared")
        os.mkdir(self.cache)
        os.chmod(self.cache, 0o1777)
        self.victim = os.path.join(self.tmp, "victim")
        os.mkdir(self.victim)
        os.chmod(self.victim, 0o1777)
        self.nobody_home = os.path.join(self.tmp, "nobody-home")
        os.mkdir(self.nobody_home)
        os.chown(self.nobody_home, NOBODY, NOBODY)
        self.good = images.push_image(self.client, "r/good", "v1", [
            [{"path": "marker", "type": "file", "data": "good\n"}]])
        self.evil = images.push_image(self.client, "r/evil", "v1", [
            [{"path": "marker", "type": "file", "data": "evil\n"}]])

    def ref(self, repo):
        return "%s/r/%s:v1" % (self.reg.hostport, repo)

    def run_root(self, args, timeout=60):
        return fpull.run(args + ["--cache-dir", self.cache], timeout=timeout)

    def run_nobody(self, args, check=0):
        env = fpull.base_env({"HOME": self.nobody_home, "XDG_CONFIG_HOME": None,
                              "XDG_CACHE_HOME": None, "XDG_RUNTIME_DIR": None})
        cp = subprocess.run([fpull.binary()] + args + ["--cache-dir", self.cache], env=env,
                            preexec_fn=as_nobody, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=60)
        if check is not None and cp.returncode != check:
            raise AssertionError("as nobody: fpull %s: exit %d\n%s" % (" ".join(args),
                                                                      cp.returncode, cp.stderr))
        return cp

    def record_path(self, reference, uid=None):
        """The record uid writes (HEX.uUID.json); uid None: the one name older fpull used."""
        name = hashlib.sha256(reference.encode()).hexdigest()
        name += ".json" if uid is None else ".u%d.json" % uid
        return os.path.join(self.cache, "tags", name)

    def assert_victim_untouched(self):
        self.assertEqual(os.listdir(self.victim), [])

    def test_forged_tag_record_is_not_used(self):
        # Mallory fills the cache with her image and names it under root's reference.
        self.run_nobody(["prefetch", "-q", self.ref("evil")])
        with open(self.record_path(self.ref("evil"), NOBODY)) as f:
            evil_digest = json.load(f)["digest"]
        good_ref = self.ref("good")
        rec = self.record_path(good_ref, 0)
        with open(rec, "w") as f:
            json.dump({"reference": good_ref, "digest": evil_digest, "time": 0}, f)
        os.chown(rec, NOBODY, NOBODY)
        out = os.path.join(self.tmp, "out")
        cp = self.run_root(["pull", "-q", "--offline", good_ref, out])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("ignoring the tag record", cp.stderr)
        self.assertIn("uid %d" % NOBODY, cp.stderr)
        self.assertFalse(os.path.exists(out))
        # Online, root resolves the tag itself and gets the right image.
        self.run_root(["pull", "-q", good_ref, out]).check_returncode()
        with open(os.path.join(out, "marker")) as f:
            self.assertEqual(f.read(), "good\n")
        # Its own record is not used either while tags/ is Mallory's (she ran first): she
        # could rename it away and put it back after root wrote a newer one (issue 20.5).
        out2 = os.path.join(self.tmp, "out2")
        cp = self.run_root(["pull", "-q", "--offline", good_ref, out2])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("tags/ is owned by uid %d" % NOBODY, cp.stderr)
        self.assertFalse(os.path.exists(out2))

    def test_root_record_is_used_by_the_other_user(self):
        self.run_root(["prefetch", "-q", self.ref("good")]).check_returncode()
        out = os.path.join(self.nobody_home, "out")
        self.run_nobody(["pull", "-q", "--offline", self.ref("good"), out])
        with open(os.path.join(out, "marker")) as f:
            self.assertEqual(f.read(), "good\n")

    def test_fifo_as_tag_record_does_not_hang(self):
        self.run_nobody(["prefetch", "-q", self.ref("evil")])
        rec = self.record_path(self.ref("good"))
        subprocess.run(["mkfifo", rec], preexec_fn=as_nobody, check=True)
        out = os.path.join(self.tmp, "out")
        cp = self.run_root(["pull", "-q", "--offline", self.ref("good"), out], timeout=30)
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("not a regular file", cp.stderr)
        self.assertFalse(os.path.exists(out))

    def test_symlinked_record_is_not_followed(self):
        self.run_nobody(["prefetch", "-q", self.ref("evil")])
        target = os.path.join(self.nobody_home, "rec.json")
        with open(target, "w") as f:
            f.write("{}")
        os.symlink(target, self.record_path(self.ref("good")))
        cp = self.run_root(["pull", "-q", "--offline", self.ref("good"),
                            os.path.join(self.tmp, "out")])
        self.assertEqual(cp.returncode, 5, cp.stderr)

    def test_planted_private_dir_is_refused(self):
        # Mallory creates the working directory root would use, hoping root writes there:
        # root never does, and a name taken first denies root's pull nothing (issue 39).
        self.run_nobody(["prefetch", "-q", self.ref("evil")])
        trap = os.path.join(self.cache, "tmp", "u0")
        os.mkdir(trap)
        os.chown(trap, NOBODY, NOBODY)
        os.chmod(trap, 0o777)
        cp = self.run_root(["pull", "-q", self.ref("good"), os.path.join(self.tmp, "out")])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(os.listdir(trap), [])
        own = [n for n in os.listdir(os.path.join(self.cache, "tmp")) if n.startswith("u0.")]
        self.assertEqual(len(own), 1, own)
        st = os.stat(os.path.join(self.cache, "tmp", own[0]))
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (0, 0o700))

    def test_swapped_tmp_symlink_is_never_written_through(self):
        # tmp/ is mallory's (she ran first): she swaps it for a symlink to a directory of
        # her choice. Root's pull must neither write there nor succeed through it.
        self.run_nobody(["prefetch", "-q", self.ref("evil")])
        tmp = os.path.join(self.cache, "tmp")
        os.rename(tmp, os.path.join(self.cache, "tmp.real"))
        os.symlink(self.victim, tmp)
        os.lchown(tmp, NOBODY, NOBODY)
        cp = self.run_root(["pull", "-q", self.ref("good"), os.path.join(self.tmp, "out")])
        self.assertNotEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("tmp", fpull.error_line(cp.stderr))
        self.assert_victim_untouched()

    def test_other_users_blob_is_unpacked_from_a_verified_private_copy(self):
        # Mallory's blobs (hers to rewrite at any time) are copied while hashed, and the
        # copy is unpacked; a blob she corrupted in place is refused, never unpacked.
        self.run_nobody(["prefetch", "-q", self.ref("good")])
        by_digest = "%s/r/good@%s" % (self.reg.hostport, self.good["digest"])
        out = os.path.join(self.tmp, "out")
        cp = self.run_root(["pull", "-v", "--offline", by_digest, out])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("private copy", cp.stderr)
        with open(os.path.join(out, "marker")) as f:
            self.assertEqual(f.read(), "good\n")
        layer = self.good["layers"][0]["digest"].split(":")[1]
        blob = os.path.join(self.cache, "blobs", "sha256", layer)
        st = os.stat(blob)
        self.assertEqual(st.st_uid, NOBODY)
        with open(blob, "r+b") as dst:
            dst.write(os.urandom(st.st_size))
        out2 = os.path.join(self.tmp, "out2")
        cp = self.run_root(["pull", "-q", "--offline", by_digest, out2])
        self.assertIn(cp.returncode, (5, 7), cp.stderr)
        self.assertFalse(os.path.exists(out2))

if __name__ == "__main__":
    unittest.main()
