"""Verified records (lib/cache/cache_verified.h): a warm pull from the caller's own cache
does not hash a blob again when the caller's record says it was verified as the file is
now (same inode, size and ctime), nor its DiffID when the record holds the one the config
names. Anything else is hashed as ever: a blob changed in place, a record that is a
symlink or another user's, a blob from a shared cache, a config naming another DiffID."""
import json
import os
import shutil

import cases
import fpull
import images

NOBODY = 65534
TRUSTED = "trusted by its verified record"


layer = images.random_layer


class VerifiedRecords(cases.RegistryCase):
    tmp_prefix = "fpull-verified-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.entries = [layer("a"), layer("b")]
        self.raw = [images.tar_layer(e) for e in self.entries]
        self.blobs = [images.compress(r, "gzip") for r in self.raw]
        self.img = images.push_image(self.client, "hpc/app", "v1", self.entries_as_blobs())
        self.n = 0

    def entries_as_blobs(self, diff_ids=None):
        """The same layer blobs every time (gzip output is not reproducible byte for byte)."""
        out = []
        for i, (blob, raw) in enumerate(zip(self.blobs, self.raw)):
            d = {"blob": blob, "uncompressed": raw, "compression": "gzip"}
            if diff_ids and diff_ids[i]:
                d["diff_id"] = diff_ids[i]
            out.append(d)
        return out

    def ref(self, repo="hpc/app", tag="v1"):
        return "%s/%s:%s" % (self.reg.hostport, repo, tag)

    def pull(self, ref=None, check=0, extra=(), env=None):
        """pull -v into a fresh directory: (process, JSON result or None, dest)."""
        self.n += 1
        dest = os.path.join(self.tmp, "root%d" % self.n)
        cp = fpull.run(["pull", "-v", "--json", "--progress", "none", "--cache-dir", self.cache]
                       + list(extra) + [ref or self.ref(), dest], check=check, env=env)
        doc = json.loads(cp.stdout) if cp.returncode == 0 else None
        return cp, doc, dest

    def blob_path(self, i, cache=None):
        hexd = self.img["layers"][i]["digest"].split(":")[1]
        return os.path.join(cache or self.cache, "blobs", "sha256", hexd)

    def record_path(self, i, cache=None):
        hexd = self.img["layers"][i]["digest"].split(":")[1]
        return os.path.join(cache or self.cache, "tmp", "u%d" % os.geteuid(), "verified", hexd)

    def blob_trusted(self, cp, i):
        return ("blob %s %s" % (self.img["layers"][i]["digest"], TRUSTED)) in cp.stderr

    def diff_id_trusted(self, cp, i):
        return ("layer %s: DiffID %s %s" % (self.img["layers"][i]["digest"],
                                            self.img["layers"][i]["diff_id"], TRUSTED)) in cp.stderr

    def assert_tree(self, dest):
        for e in self.entries:
            for f in e:
                with open(os.path.join(dest, f["path"]), "rb") as fh:
                    data = f["data"]
                    self.assertEqual(fh.read(), data if isinstance(data, bytes) else data.encode())

    def corrupt_in_place(self, i, keep_mtime=False):
        p = self.blob_path(i)
        st = os.stat(p)
        with open(p, "r+b") as f:
            f.seek(st.st_size // 2)
            b = f.read(1)
            f.seek(st.st_size // 2)
            f.write(bytes([b[0] ^ 0xff]))
        if keep_mtime:
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
            self.assertEqual(os.stat(p).st_mtime_ns, st.st_mtime_ns)
        self.assertEqual(os.stat(p).st_size, st.st_size)
        return p

    def test_warm_pull_hashes_neither_blob_nor_diff_id(self):
        cp, doc, dest = self.pull()
        self.assertFalse(any(self.blob_trusted(cp, i) for i in range(2)), cp.stderr)
        self.assert_tree(dest)
        for i in range(2):
            with open(self.record_path(i)) as f:
                rec = f.read().split()
            st = os.stat(self.blob_path(i))
            self.assertEqual(rec[0], self.img["layers"][i]["digest"])
            self.assertEqual([int(x) for x in rec[1:4]], [st.st_dev, st.st_ino, st.st_size])
            self.assertEqual(int(rec[4]) * 10**9 + int(rec[5]), st.st_ctime_ns)
            self.assertEqual(rec[6], self.img["layers"][i]["diff_id"])
            self.assertEqual(os.stat(self.record_path(i)).st_mode & 0o777, 0o600)
        cp, doc, dest = self.pull()
        self.assertEqual(doc["bytes_downloaded"], 0)
        for i in range(2):
            self.assertTrue(self.blob_trusted(cp, i), cp.stderr)
            self.assertTrue(self.diff_id_trusted(cp, i), cp.stderr)
        self.assert_tree(dest)
        # prefetch of a cached image checks its blobs the same way.
        cp = fpull.run(["prefetch", "-v", "--cache-dir", self.cache, self.ref()], check=0)
        self.assertTrue(self.blob_trusted(cp, 0), cp.stderr)

    def check_changed_blob_is_hashed(self, keep_mtime):
        self.pull()
        self.corrupt_in_place(1, keep_mtime)
        cp, doc, dest = self.pull()
        self.assertTrue(self.blob_trusted(cp, 0), cp.stderr)
        self.assertFalse(self.blob_trusted(cp, 1), cp.stderr)
        self.assertIn("corrupt", cp.stderr)
        self.assertGreaterEqual(doc["bytes_downloaded"], self.img["layers"][1]["size"])
        self.assert_tree(dest)
        # The fresh copy is recorded anew, and trusted next time.
        cp, doc, dest = self.pull()
        self.assertTrue(self.blob_trusted(cp, 1), cp.stderr)
        self.assertEqual(doc["bytes_downloaded"], 0)

    def test_blob_changed_in_place_is_hashed_and_fetched_again(self):
        self.check_changed_blob_is_hashed(keep_mtime=False)

    def test_blob_changed_in_place_with_its_mtime_restored_is_still_caught(self):
        # ctime cannot be set back: the record no longer matches.
        self.check_changed_blob_is_hashed(keep_mtime=True)

    def test_blob_changed_in_place_offline_fails_as_before(self):
        self.pull()
        p = self.corrupt_in_place(1, keep_mtime=True)
        cp, doc, dest = self.pull(check=5, extra=["--offline"])
        self.assertIn(self.img["layers"][1]["digest"], fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(dest))
        self.assertFalse(os.path.exists(p))

    def check_record_ignored(self, plant):
        self.pull()
        rec = self.record_path(0)
        self.assertTrue(os.path.isfile(rec))
        plant(rec)
        cp, doc, dest = self.pull()
        self.assertFalse(self.blob_trusted(cp, 0), cp.stderr)
        self.assertFalse(self.diff_id_trusted(cp, 0), cp.stderr)
        self.assertTrue(self.blob_trusted(cp, 1), cp.stderr)  # the untouched one
        self.assert_tree(dest)

    def test_record_that_is_a_symlink_is_ignored(self):
        def plant(rec):
            elsewhere = os.path.join(self.tmp, "record-copy")
            shutil.copy(rec, elsewhere)
            os.unlink(rec)
            os.symlink(elsewhere, rec)
        self.check_record_ignored(plant)

    def test_record_of_another_user_is_ignored(self):
        if os.geteuid() != 0:
            self.fail("needs root to give a file to another user (scripts/test runs as root)")
        self.check_record_ignored(lambda rec: os.chown(rec, NOBODY, NOBODY))

    def test_record_others_may_write_is_ignored(self):
        self.check_record_ignored(lambda rec: os.chmod(rec, 0o662))

    def test_records_for_a_shared_cache_are_ignored(self):
        # Root fills a cache that is then only a shared one: its records, and copies of them
        # in the own cache's private directory, vouch for nothing read from it.
        self.pull()
        shared = self.cache
        self.cache = os.path.join(self.tmp, "own")
        vdir = os.path.dirname(self.record_path(0))
        os.makedirs(vdir)
        for d in (vdir, os.path.dirname(vdir)):  # the private directory is the caller's alone
            os.chmod(d, 0o700)
        # The own cache holds a wrong-sized copy of each (dropped when the pull looks, so
        # that the shared one is used), or opening it would drop the records of blobs it
        # does not have.
        os.makedirs(os.path.dirname(self.blob_path(0)))
        for i in range(2):
            shutil.copy(self.record_path(i, shared), self.record_path(i))
            with open(self.blob_path(i), "wb") as f:
                f.write(b"wrong size")
        env = {"FPULL_SHARED_CACHES": shared}
        cp, doc, dest = self.pull(extra=["--offline"], env=env)
        for i in range(2):
            self.assertFalse(self.blob_trusted(cp, i), cp.stderr)
            self.assertFalse(self.diff_id_trusted(cp, i), cp.stderr)
        self.assert_tree(dest)
        # A corrupt layer in the shared cache is caught as before, record or not.
        with open(self.blob_path(1, shared), "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0xff]))
        cp, doc, dest = self.pull(extra=["--offline"], env=env, check=5)
        self.assertIn("corrupt", cp.stderr)
        self.assertFalse(os.path.exists(dest))

    def test_a_shared_cache_blob_root_wrote_is_hashed_once(self):
        # fpull serve and the Slurm plugin read a site's shared cache (root's) on every
        # request: the first use hashes a blob and records it in the caller's own private
        # directory (verified-shared/), later uses of the same file do not hash it again.
        self.pull()
        shared = self.cache
        self.cache = os.path.join(self.tmp, "own")
        env = {"FPULL_SHARED_CACHES": shared}

        def shared_record(i):
            return self.record_path(i).replace(os.sep + "verified" + os.sep,
                                               os.sep + "verified-shared" + os.sep)
        cp, doc, dest = self.pull(extra=["--offline"], env=env)
        self.assertFalse(any(self.blob_trusted(cp, i) for i in range(2)), cp.stderr)
        self.assert_tree(dest)
        for i in range(2):
            self.assertFalse(os.path.exists(self.blob_path(i)))  # nothing copied in
            with open(shared_record(i)) as f:
                rec = f.read().split()
            st = os.stat(self.blob_path(i, shared))
            self.assertEqual([int(x) for x in rec[1:4]], [st.st_dev, st.st_ino, st.st_size])
            self.assertEqual(int(rec[4]) * 10**9 + int(rec[5]), st.st_ctime_ns)
        cp, doc, dest = self.pull(extra=["--offline"], env=env)
        for i in range(2):
            self.assertTrue(self.blob_trusted(cp, i), cp.stderr)
            self.assertFalse(self.diff_id_trusted(cp, i), cp.stderr)  # hashed as ever
        self.assert_tree(dest)
        # Under a policy no record is trusted, the shared cache's included.
        policy = os.path.join(self.tmp, "policy.json")
        with open(policy, "w") as f:
            json.dump({"default": [{"type": "insecureAcceptAnything"}]}, f)
        cp, doc, dest = self.pull(extra=["--offline", "--policy", policy], env=env)
        self.assertFalse(any(self.blob_trusted(cp, i) for i in range(2)), cp.stderr)
        # Changed in place there: the record no longer matches, the blob is hashed and
        # passed over (the site's to repair), the offline pull fails whole.
        p = self.blob_path(1, shared)

        def flip():
            with open(p, "r+b") as f:
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 0xff]))
        flip()
        cp, doc, dest = self.pull(extra=["--offline"], env=env, check=5)
        self.assertFalse(self.blob_trusted(cp, 1), cp.stderr)
        self.assertIn("corrupt", cp.stderr)
        self.assertFalse(os.path.exists(dest))
        self.assertTrue(os.path.exists(p))
        flip()  # repaired: hashed once more (a new ctime), then trusted again
        # Another user's blob there is hashed through a private copy every time: no record.
        os.remove(shared_record(0))
        os.chown(self.blob_path(0, shared), NOBODY, NOBODY)
        for n in range(2):
            cp, doc, dest = self.pull(extra=["--offline"], env=env)
            self.assertFalse(self.blob_trusted(cp, 0), cp.stderr)
            self.assertEqual(self.blob_trusted(cp, 1), n == 1, cp.stderr)
            self.assert_tree(dest)
        self.assertFalse(os.path.exists(shared_record(0)))

    def test_a_forged_record_is_trusted_by_no_pull_under_a_policy(self):
        # Issue 39 (review 4, LOW 5): the cache and its records are the user's own; a site's
        # policy= must not be got past by a layer changed in place whose record the user
        # wrote anew to match it (an offline pull under the policy unpacked it unhashed).
        self.pull()
        p = self.corrupt_in_place(1)
        st = os.stat(p)
        rec = self.record_path(1)
        with open(rec) as f:
            fields = f.read().split()
        fields[1:6] = [str(st.st_dev), str(st.st_ino), str(st.st_size),
                       str(st.st_ctime_ns // 10**9), str(st.st_ctime_ns % 10**9)]
        with open(rec, "w") as f:
            f.write(" ".join(fields) + "\n")
        # Without a policy the record is the user's word for the user's own pull.
        cp, doc, dest = self.pull(extra=["--offline"], check=None)
        self.assertTrue(self.blob_trusted(cp, 1), cp.stderr)
        policy = os.path.join(self.tmp, "policy.json")
        with open(policy, "w") as f:
            json.dump({"default": [{"type": "insecureAcceptAnything"}]}, f)
        cp, doc, dest = self.pull(extra=["--offline", "--policy", policy], check=5)
        self.assertFalse(self.blob_trusted(cp, 1), cp.stderr)
        self.assertFalse(self.diff_id_trusted(cp, 1), cp.stderr)
        self.assertIn("corrupt", cp.stderr)
        self.assertFalse(os.path.exists(dest))

    def test_config_naming_another_diff_id_is_checked(self):
        self.pull()
        bad = "sha256:" + "0" * 64
        images.push_image(self.client, "hpc/other", "v1", self.entries_as_blobs([None, bad]))
        cp, doc, dest = self.pull(self.ref("hpc/other"), check=7)
        self.assertTrue(self.blob_trusted(cp, 1), cp.stderr)  # the blob is what it says
        self.assertFalse("DiffID %s %s" % (bad, TRUSTED) in cp.stderr)
        self.assertIn("DiffID mismatch", fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(dest))
        # The record still holds the DiffID that was checked.
        with open(self.record_path(1)) as f:
            self.assertEqual(f.read().split()[6], self.img["layers"][1]["diff_id"])

    def test_housekeeping_removes_records_with_their_blobs(self):
        shared = self.img["layers"][0]
        other = images.push_image(self.client, "hpc/b", "v1",
                                  [self.entries_as_blobs()[0], layer("own")])
        self.pull()
        self.pull(self.ref("hpc/b"))
        own_b = other["layers"][1]["digest"].split(":")[1]
        vdir = os.path.dirname(self.record_path(0))
        self.assertIn(own_b, os.listdir(vdir))
        du = fpull.run_json(["cache", "du", "--json", "--cache-dir", self.cache])[1]
        self.assertEqual(du["partials"], {"count": 0, "bytes": 0})  # records are none
        fpull.run(["cache", "rm", self.ref("hpc/b"), "--cache-dir", self.cache], check=0)
        names = os.listdir(vdir)
        self.assertNotIn(own_b, names)
        self.assertIn(shared["digest"].split(":")[1], names)  # hpc/app still needs it
        fpull.run(["cache", "prune", "--all", "--cache-dir", self.cache], check=0)
        self.assertEqual(os.listdir(vdir), [])
        # A record whose blob went some other way goes when a cache is next opened.
        self.pull()
        os.unlink(self.blob_path(0))
        cp, doc, dest = self.pull()
        self.assertFalse(self.blob_trusted(cp, 0), cp.stderr)
        self.assertTrue(os.path.isfile(self.record_path(0)))  # the new copy's
        os.unlink(self.blob_path(0))
        fpull.run(["prefetch", "-q", "--offline", "--cache-dir", self.cache, self.ref()],
                  check=5)
        self.assertFalse(os.path.exists(self.record_path(0)))
