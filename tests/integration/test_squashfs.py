"""`fpull pull --format squashfs` against the real registry (issue 14, "Done when"): the
image holds exactly the tree of the directory output, read back through sqfs2tar
(squashfs-tools-ng), unsquashfs (squashfs-tools) and a squashfuse mount; the same exit
codes for bad content and options; atomic publish."""
import json
import os
import random
import re
import shutil
import stat
import subprocess

import fpull
import images
import test_fixtures
from sqfs_trees import walk_tar, walk_tree, without_config
from test_pull_basic import LAYERS, PullTestCase

SQFS_TOOLS = ("sqfs2tar", "unsquashfs", "squashfuse")

# Every kind of entry the merge handles, as root: owners, setuid, xattrs, devices, fifos,
# hardlinks (also to a symlink), a sparse-looking big file, names needing escapes.
KINDS = [
    {"path": "own", "type": "dir", "mode": 0o710, "uid": 1000, "gid": 100, "mtime": 1400000000},
    {"path": "own/f", "data": "owned", "uid": 1000, "gid": 100, "mode": 0o4750},
    {"path": "own/x", "data": "xattrs", "xattrs": {"user.a": "1", "user.b": b"\x00\xff",
                                                   "trusted.no": "dropped"}},
    {"path": "own/cap", "data": "cap", "xattrs": {"security.capability": b"\x01\x00\x00\x02"
                                                  + b"\x00" * 16}},
    {"path": "xdir", "type": "dir", "xattrs": {"user.dir": "yes"}},
    {"path": "dev/null", "type": "chardev", "devmajor": 1, "devminor": 3, "mode": 0o666},
    {"path": "dev/big", "type": "blockdev", "devmajor": 259, "devminor": 70000},
    {"path": "run/fifo", "type": "fifo", "mode": 0o600},
    {"path": "ln/target", "type": "symlink", "target": "../own/f"},
    {"path": "ln/hard-to-symlink", "type": "hardlink", "target": "ln/target"},
    {"path": "zeros", "data": b"\x00" * 300000 + b"end"},
    {"path": "big", "data": bytes(range(256)) * 2000},
    {"path": "odd name\twith\nbytes \xe9", "data": "odd"},
    {"path": "empty", "data": b""},
]
UPPER = [
    {"path": "own/f", "data": "owned, replaced", "uid": 7, "gid": 8, "mode": 0o2755},
    images.whiteout("big"),
    {"path": "xdir", "type": "dir", "mode": 0o700, "xattrs": {"user.dir": "changed"}},
]


class SquashfsCase(PullTestCase):
    tmp_prefix = "fpull-sqfs-"
    tools = SQFS_TOOLS

    def push(self, layers, compression="gzip", fmt="oci", repo="x/y"):
        return images.push_image(self.client, repo, "tag", layers, fmt=fmt,
                                 compression=compression)

    def pull_both(self, repo="x/y", extra=(), name=""):
        """Pulls the image twice, as a directory and as a SquashFS image."""
        ref = self.ref(repo, "tag")
        d, img = self.path("dirout" + name), self.path("img%s.sqsh" % name)
        self.fpull(["pull", ref, d], check=0)
        # As root the image holds setuid bits, capabilities and devices only when asked;
        # asked here, to hold what the root directory output holds.
        keep = ["--keep-privileged"] if os.geteuid() == 0 else []
        cp, doc = self.pull_json(["--format", "squashfs"] + keep + list(extra) + [ref, img])
        self.assertEqual(doc["rootfs"], os.path.realpath(img))
        return d, img

    def sqfs2tar(self, img):
        cp = subprocess.run(["sqfs2tar", img], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return cp.stdout

    def assert_same_tree(self, d, img, unsquashfs=True):
        """The image holds the directory output's tree, and besides it only the image's
        configuration files (SquashfsImageConfig checks those)."""
        want = walk_tree(d)
        got = walk_tar(self.sqfs2tar(img))
        entries = len(got[0])
        tree, want_tree = without_config(got[0], want[0])
        self.assertEqual(sorted(tree), sorted(want_tree))
        for rel in want_tree:
            self.assertEqual(tree[rel], want_tree[rel], rel)
        self.assertEqual(got[1], want[1], "hardlink groups")
        if not unsquashfs:
            return want[0]
        # unsquashfs (the other implementation) must read the same image.
        cp = subprocess.run(["unsquashfs", "-lls", "-n", img], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(len([l for l in cp.stdout.splitlines() if "squashfs-root/" in l]),
                         entries, cp.stdout)
        return want[0]

    def assert_kernel_mount_is(self, d, img, name=""):
        """Mounts img as the docs say (loop, nosuid, nodev) and compares it with the
        directory d: the kernel is the strictest reader, every entry, owner, mode, time,
        xattr (security.capability too) and hardlink as in the directory output."""
        if os.geteuid() != 0:
            self.skipTest("mounting a loop device needs root")
        mnt = self.path("kmnt" + name)
        os.mkdir(mnt)
        cp = subprocess.run(["mount", "-t", "squashfs", "-o", "loop,ro,nosuid,nodev", img, mnt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if cp.returncode != 0:
            self.skipTest("the kernel cannot mount squashfs here: %s" % cp.stderr.strip())
        try:
            got, want = walk_tree(mnt), walk_tree(d)
            self.assertEqual(without_config(got[0], want[0]), (want[0], want[0]))
            self.assertEqual(got[1], want[1])
        finally:
            subprocess.run(["umount", mnt], stderr=subprocess.DEVNULL)


class SquashfsTree(SquashfsCase):
    def check(self, layers, compression="gzip", fmt="oci"):
        self.push(layers, compression, fmt)
        d, img = self.pull_both()
        return self.assert_same_tree(d, img)

    def test_sqfs_same_tree_oci_gzip(self):
        tree = self.check(LAYERS)
        # The merge really happened: whiteouts, opaque directory, recreated directory.
        self.assertNotIn("etc/gone", tree)
        self.assertNotIn("opq/old1", tree)
        self.assertIn("tree/c", tree)
        self.assertNotIn("tree/a", tree)

    def test_sqfs_same_tree_oci_zstd(self):
        self.check(LAYERS, "zstd")

    def test_sqfs_same_tree_uncompressed(self):
        self.check(LAYERS, None)

    def test_sqfs_same_tree_docker_mixed(self):
        self.check(LAYERS, ["gzip", "zstd", None], "docker")

    def test_sqfs_same_tree_fixture_layers(self):
        tree = self.check([test_fixtures.LAYER1, test_fixtures.LAYER2])
        self.assertEqual(tree["bin/tool"]["mode"], 0o4755)
        self.assertEqual(tree["bin/tool"]["xattrs"], {"user.fpull": b"yes"})

    def test_sqfs_same_tree_owners_devices_xattrs_links(self):
        tree = self.check([KINDS, UPPER])
        self.assertEqual((tree["own/f"]["uid"], tree["own/f"]["gid"]), (7, 8))
        self.assertEqual(tree["dev/big"]["rdev"], (259, 70000))
        self.assertEqual(tree["xdir"]["xattrs"], {"user.dir": b"changed"})
        self.assertNotIn("big", tree)
        self.assertIn("trusted.no", str(KINDS))  # given, and not kept:
        self.assertEqual(sorted(tree["own/x"]["xattrs"]), ["user.a", "user.b"])

    def test_sqfs_compressors_block_sizes(self):
        self.push(LAYERS)
        ref = self.ref("x/y", "tag")
        d = self.path("dirout")
        self.fpull(["pull", ref, d], check=0)
        for comp, extra in (("gzip", ["--sqfs-level", "1"]), ("xz", []), ("lz4", []),
                            ("zstd", ["--sqfs-block-size", "4K", "--sqfs-level", "3"])):
            img = self.path("img-%s.sqsh" % comp)
            self.fpull(["pull", "--format", "squashfs", "--sqfs-comp", comp] + extra +
                       [ref, img], check=0)
            cp = subprocess.run(["unsquashfs", "-s", img], stdout=subprocess.PIPE, text=True)
            self.assertIn("Compression %s" % comp, cp.stdout)
            if "--sqfs-block-size" in extra:
                self.assertIn("Block size 4096", cp.stdout)
            # unsquashfs 4.5.1 refuses lz4 images of libsquashfs 1.2 (tar2sqfs's own too:
            # "failed to read id table block"); sqfs2tar reads them.
            self.assert_same_tree(d, img, unsquashfs=comp != "lz4")

    def test_sqfs_squashfuse_mount(self):
        if not os.path.exists("/dev/fuse"):
            self.skipTest("no /dev/fuse on this machine")
        self.push([KINDS, UPPER])
        d, img = self.pull_both()
        mnt = self.path("mnt")
        os.mkdir(mnt)
        cp = subprocess.run(["squashfuse", "-o", "nosuid,nodev", img, mnt], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
        if cp.returncode != 0:
            self.skipTest("squashfuse cannot mount here: %s" % cp.stderr.strip())
        try:
            got, want = without_config(walk_tree(mnt)[0], walk_tree(d)[0])
            self.assertEqual(sorted(got), sorted(want))
            for rel in want:
                w = dict(want[rel])
                # squashfuse does not pass security.* attributes through FUSE (sqfs2tar
                # above shows the image holds them).
                if "xattrs" in w:
                    w["xattrs"] = {k: v for k, v in w["xattrs"].items()
                                   if not k.startswith("security.")}
                self.assertEqual(got[rel], w, rel)
        finally:
            # fusermount3 comes with fuse3 (scripts/deps.sh); root can also umount.
            um = ["fusermount3", "-u"] if shutil.which("fusermount3") else ["umount"]
            subprocess.run(um + [mnt], stderr=subprocess.DEVNULL)


    def test_sqfs_kernel_mount(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a loop device needs root")
        self.push([KINDS, UPPER])
        self.assert_kernel_mount_is(*self.pull_both())


class SquashfsSettings(SquashfsCase):
    """Issue 24: a fast default, an uncompressed image on request, and no data of removed
    files in the image."""

    def unsquashfs_s(self, img):
        cp = subprocess.run(["unsquashfs", "-s", img], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return cp.stdout

    def test_sqfs_default_is_zstd_level_1_1m_blocks(self):
        self.push(LAYERS)
        d, img = self.pull_both()
        out = self.unsquashfs_s(img)
        self.assertIn("Compression zstd", out)
        self.assertRegex(out, r"compression-level 1\b")
        self.assertIn("Block size 1048576", out)
        self.assert_same_tree(d, img)

    def test_sqfs_comp_none_is_uncompressed_and_readable(self):
        data = b"compressible " * 50000
        self.push([LAYERS[0], [{"path": "text", "data": data}]] + LAYERS[1:])
        d, img = self.pull_both(extra=["--sqfs-comp", "none"])
        out = self.unsquashfs_s(img)
        for what in ("Inodes are", "Data is", "Fragments are", "(Id table) are"):
            self.assertIn(what + " uncompressed", out)
        # Nothing compressed: the text is all in the image.
        self.assertGreater(os.path.getsize(img), len(data))
        self.assert_same_tree(d, img)

    def test_sqfs_comp_none_kernel_mount(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a loop device needs root")
        self.push(LAYERS)
        self.assert_kernel_mount_is(*self.pull_both(extra=["--sqfs-comp", "none"]))

    def test_sqfs_comp_none_refuses_a_level(self):
        cp = self.fpull(["pull", "--format", "squashfs", "--sqfs-comp", "none", "--sqfs-level",
                         "3", self.ref("x/y", "tag"), self.path("img.sqsh")], check=2)
        self.assertIn("none has no levels", cp.stderr)
        self.assertFalse(os.path.exists(self.path("img.sqsh")))

    def test_sqfs_removed_data_is_cut_out(self):
        # A big file of the first layer removed by the second (whiteout, opaque directory,
        # overwrite, a whole directory whited out): the image is the size mksquashfs makes
        # of the directory output at the same settings, not that plus the removed data.
        big = os.urandom(3 << 20)
        keep = os.urandom(700000)
        lower = [{"path": "big", "data": big}, {"path": "keep", "data": keep},
                 {"path": "d/big", "data": big[::-1]}, {"path": "d/small", "data": b"s" * 5000},
                 {"path": "e/f", "data": big[1:]}, {"path": "tail", "data": keep[:1000]}]
        cases = {
            "whiteout": [images.whiteout("big"), images.whiteout("d/big")],
            "opaque": [images.opaque("d"), {"path": "d/new", "data": b"new"},
                       images.whiteout("big")],
            "overwrite": [{"path": "big", "data": b"small now"},
                          {"path": "d/big", "type": "symlink", "target": "../keep"}],
            "dir": [images.whiteout("e"), images.whiteout("d"), images.whiteout("big")],
        }
        for name, upper in cases.items():
            with self.subTest(name):
                repo = "cut/" + name
                self.push([lower, upper, [{"path": "top", "data": keep[::-1]}]], repo=repo)
                d, img = self.pull_both(repo=repo, name=name)
                self.assert_same_tree(d, img)
                mk = self.path("mk-%s.sqsh" % name)
                cp = subprocess.run(["mksquashfs", d, mk, "-noappend", "-quiet", "-no-progress",
                                     "-comp", "zstd", "-Xcompression-level", "1",
                                     "-b", "1048576"], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
                self.assertEqual(cp.returncode, 0, cp.stdout)
                ours, theirs = os.path.getsize(img), os.path.getsize(mk)
                self.assertLess(ours, theirs + (2 << 20), "the removed data is still there")
                self.assertLessEqual(abs(ours - theirs), theirs // 100, (ours, theirs))

    def test_sqfs_equal_files_and_tails_are_stored_once(self):
        # The image stores equal data once, as mksquashfs does: equal whole files through
        # the block writer's comparison of block runs, equal tails (small files, the last
        # part of big ones) through one place in a fragment block, also when that block was
        # written long before (read back from the image: the 200 unique tails in between
        # fill 12 fragment blocks, more than are ever in flight). Blocks of zeros are holes, a file of exactly two
        # blocks has no tail. All random, so only sharing can make the image small.
        rnd = random.Random(24)
        tail = rnd.randbytes(200000)
        big = rnd.randbytes((2 << 20) + 4321)
        layer = [{"path": "t/copy-first", "data": tail}]
        layer += [{"path": "u/%02d" % i, "data": rnd.randbytes(65536)} for i in range(200)]
        layer += [{"path": "t/copy-%02d" % i, "data": tail} for i in range(29)]
        layer += [{"path": "b/big-%d" % i, "data": big} for i in range(5)]
        layer += [{"path": "s/holes", "data": b"\0" * (1 << 20) + rnd.randbytes(1 << 20)
                   + b"\0" * ((1 << 20) + 100)},
                  {"path": "s/exact", "data": rnd.randbytes(2 << 20)},
                  {"path": "s/empty", "data": b""}]
        unique = 200 * 65536 + len(tail) + len(big) + (1 << 20) + (2 << 20)
        for comp in ("zstd", "none"):
            with self.subTest(comp):
                repo = "share/" + comp
                self.push([layer], repo=repo)
                d, img = self.pull_both(repo=repo, extra=["--sqfs-comp", comp], name=comp)
                self.assert_same_tree(d, img)
                size = os.path.getsize(img)
                # Stored once: the unique bytes and the tables (under 100 kB here). A second
                # copy of the tail (the written fragment block not read back) would add 200 kB.
                self.assertLess(size, unique + (100 << 10), (size, unique))
                self.assertGreater(size, unique - (64 << 10), (size, unique))
                self.assert_kernel_mount_is(d, img, name=comp)


class SquashfsRules(SquashfsCase):
    def test_sqfs_default_name_and_no_tree_written(self):
        self.push(LAYERS, repo="lib/cv-tf")
        self.fpull(["pull", "--format", "squashfs", self.ref("lib/cv-tf", "tag")], check=0)
        img = self.path("cv-tf.sqsh")
        self.assertTrue(stat.S_ISREG(os.lstat(img).st_mode))
        # Nothing else beside it: no rootfs, no staging, no temporary image.
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n != "cache"), ["cv-tf.sqsh"])

    def test_sqfs_dest_exists_without_force_exits_1_and_force_replaces(self):
        self.push(LAYERS)
        img = self.path("img.sqsh")
        with open(img, "w") as f:
            f.write("old")
        cp = self.fpull(["pull", "--format", "squashfs", self.ref("x/y", "tag"), img])
        self.assert_failed(cp, 1, "already exists")
        with open(img) as f:
            self.assertEqual(f.read(), "old")
        self.fpull(["pull", "--format", "squashfs", "--force", self.ref("x/y", "tag"), img],
                   check=0)
        with open(img, "rb") as f:
            self.assertEqual(f.read(4), b"hsqs")
        os.remove(img)
        os.mkdir(img)
        cp = self.fpull(["pull", "--format", "squashfs", "--force", self.ref("x/y", "tag"), img])
        self.assert_failed(cp, 1, "not a regular file")

    def test_sqfs_leftover_of_a_killed_run_is_removed(self):
        self.push(LAYERS)
        left = self.path(".img.sqsh.fpull-tmp-killed01")
        with open(left, "wb") as f:
            f.write(b"hsqs half written")
        fifo = self.path(".img.sqsh.fpull-tmp-fifo0001")
        os.mkfifo(fifo)
        self.fpull(["pull", "--format", "squashfs", self.ref("x/y", "tag"),
                    self.path("img.sqsh")], check=0)
        self.assertFalse(os.path.lexists(left))
        # Not ours to open (a FIFO would block, a device could act): left alone.
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_sqfs_corrupt_blob_exits_7_and_leaves_nothing(self):
        good = images.tar_layer([{"path": "a", "data": "a"}])
        layer = {"blob": images.compress(good, "gzip"),
                 "media_type": images.OCI_LAYER["gzip"],
                 "diff_id": images.sha256_digest(b"not the content")}
        self.push([layer])
        cp = self.fpull(["pull", "--format", "squashfs", self.ref("x/y", "tag"),
                         self.path("img.sqsh")])
        self.assert_failed(cp, 7, "DiffID")
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n != "cache"), [])

    def test_sqfs_hostile_dotdot_exits_8_like_dir(self):
        bad = images.tar_layer([{"path": "ok", "data": "1"},
                                {"path": "../escape", "data": "x", "raw_name": True}])
        self.push([bad], None)
        ref = self.ref("x/y", "tag")
        cpd = self.fpull(["pull", ref, self.path("d")])
        cps = self.fpull(["pull", "--format", "squashfs", ref, self.path("img.sqsh")])
        self.assert_failed(cpd, 8, "path has a .. component")
        line = self.assert_failed(cps, 8, "path has a .. component", "entry ../escape")
        self.assertEqual(line, fpull.error_line(cpd.stderr))
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n != "cache"), [])

    def test_sqfs_bad_options_exit_2_before_any_work(self):
        ref = self.ref("x/y", "tag")
        for args, needle in ((["--format", "squashfz"], "--format"),
                             (["--format", "squashfs", "--sqfs-comp", "zstdd"], "zstdd"),
                             (["--format", "squashfs", "--sqfs-comp", "gzip",
                               "--sqfs-level", "12"], "level 12"),
                             (["--format", "squashfs", "--sqfs-comp", "lz4",
                               "--sqfs-level", "3"], "no levels"),
                             (["--format", "squashfs", "--sqfs-block-size", "3000"], "3000"),
                             (["--format", "squashfs", "--sqfs-block-size", "2M"], "2097152"),
                             (["--format", "squashfs", "--sqfs-threads", "0"], "--sqfs-threads"),
                             (["--sqfs-comp", "gzip"], "--format squashfs")):
            cp = self.fpull(["pull"] + args + [ref, self.path("img.sqsh")])
            self.assert_failed(cp, 2, needle)
        # The registry was never asked: the options were refused first.
        self.assertNotIn("/v2/x/y/", self.reg.log())
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n != "cache"), [])

    def test_sqfs_root_keeps_setuid_caps_devices_only_with_keep_privileged(self):
        # Issue 20.2: others mount a root's image; without nosuid a setuid-root file of it
        # runs as root. Dropped (and counted) unless --keep-privileged asks for them.
        if os.geteuid() != 0:
            self.skipTest("needs root")
        self.push([KINDS, UPPER])
        ref = self.ref("x/y", "tag")
        img = self.path("img.sqsh")
        cp = self.fpull(["pull", "--format", "squashfs", ref, img], check=0)
        # own/f is 04750 in the lower layer and 02755 in the upper: one bit each.
        for needle in ("2 setuid/setgid bit(s) dropped: keeping them needs --keep-privileged",
                       "2 device node(s) skipped: creating them needs --keep-privileged",
                       "1 file capability dropped: keeping them needs --keep-privileged"):
            self.assertIn("fpull: warning: " + needle, cp.stderr)
        tree = walk_tar(self.sqfs2tar(img))[0]
        self.assertEqual(tree["own/f"]["mode"], 0o755)  # 02755 in the layer
        self.assertEqual((tree["own/f"]["uid"], tree["own/f"]["gid"]), (7, 8))  # owners kept
        self.assertNotIn("dev/null", tree)
        self.assertNotIn("dev/big", tree)
        self.assertNotIn("security.capability", tree["own/cap"].get("xattrs", {}))
        ls = self.unsquashfs_lls(img)
        self.assertNotIn("squashfs-root/dev/null", ls)
        modes = [l.split()[0] for l in ls.splitlines() if "squashfs-root" in l]
        self.assertEqual(len(modes), len(tree) + 1, ls)  # and the root
        self.assertEqual([m for m in modes if m[0] in "bc" or "s" in m.lower()], [], ls)

        kept = self.path("kept.sqsh")
        cp = self.fpull(["pull", "--format", "squashfs", "--keep-privileged", ref, kept],
                        check=0)
        self.assertNotIn("warning", cp.stderr)
        tree = walk_tar(self.sqfs2tar(kept))[0]
        self.assertEqual(tree["own/f"]["mode"], 0o2755)
        self.assertEqual(tree["dev/null"]["rdev"], (1, 3))
        self.assertIn("security.capability", tree["own/cap"]["xattrs"])
        self.assertIn("crw-rw-rw- root/root", self.unsquashfs_lls(kept))

    def unsquashfs_lls(self, img):
        cp = subprocess.run(["unsquashfs", "-lls", "-n", img], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return cp.stdout

    def test_sqfs_keep_privileged_is_root_only_and_squashfs_only(self):
        ref = self.ref("x/y", "tag")
        cp = self.fpull(["pull", "--keep-privileged", ref, self.path("d")])
        self.assert_failed(cp, 2, "--keep-privileged", "--format squashfs")
        if os.geteuid() == 0:
            home = self.path("home")
            os.mkdir(home)
            os.chown(home, 65534, 65534)

            def as_nobody():
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)

            cp = subprocess.run([fpull.binary(), "pull", "--format", "squashfs",
                                 "--keep-privileged", ref, os.path.join(home, "img.sqsh")],
                                env=fpull.base_env({"HOME": home, "FPULL_CACHE": None}),
                                preexec_fn=as_nobody, capture_output=True, text=True,
                                timeout=60)
        else:
            cp = self.fpull(["pull", "--format", "squashfs", "--keep-privileged", ref,
                             self.path("img.sqsh")])
            home = self.tmp
        self.assert_failed(cp, 2, "--keep-privileged needs root")
        self.assertEqual(len(cp.stderr.strip().splitlines()), 1, cp.stderr)
        self.assertNotIn("/v2/x/y/", self.reg.log())
        self.assertFalse(os.path.exists(os.path.join(home, "img.sqsh")))

    def test_sqfs_threads_bounded_by_affinity(self):
        if shutil.which("taskset") is None:
            self.fail("taskset is not installed (util-linux)")
        self.push(LAYERS)
        env = dict(self.env)
        cp = subprocess.run(["taskset", "-c", "0", fpull.binary(), "pull", "-v", "--format",
                             "squashfs", "--sqfs-threads", "64", self.ref("x/y", "tag"),
                             self.path("img.sqsh")], env=fpull.base_env(env), cwd=self.tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("1 thread(s)", cp.stderr)

    def test_sqfs_removed_files_are_counted_not_listed(self):
        # A file removed by a later layer: its data is counted, cut out and not listed.
        blob = os.urandom(200000)
        self.push([[{"path": "f", "data": blob}], [images.whiteout("f")]], None)
        ref = self.ref("x/y", "tag")
        cp = self.fpull(["pull", "-v", "--format", "squashfs", ref, self.path("img.sqsh")],
                        check=0)
        self.assertIn("200000 bytes of data of files later removed", cp.stderr)
        self.assertEqual(without_config(walk_tar(self.sqfs2tar(self.path("img.sqsh")))[0], {}),
                         ({}, {}))

    def test_sqfs_completion_offers_values(self):
        import test_completion
        self.assertEqual(test_completion.complete(["fpull", "pull", "--format", "sq"]),
                         {"squashfs"})
        self.assertEqual(test_completion.complete(["fpull", "pull", "--sqfs-comp", ""]),
                         {"zstd", "gzip", "xz", "lz4", "none"})
        self.assertIn("--sqfs-threads", test_completion.complete(["fpull", "pull", "--sqfs"]))


# An image config whose strings try every way out of their place in enroot's files.
HOSTILE_CONFIG = {
    "Env": ["PATH=/usr/bin:/bin", "QUOTED=\"q\"", "SPACED=a b ", "HOSTREF=${HOME}",
            "BAD=x\nEVIL=1"],
    "WorkingDir": "/srv/my \"app\" $x `y`",
    "Entrypoint": ["/bin/ent", "it's"],
    "Cmd": ["run", "$HOME", "`x`", "a\nb"],
    "Labels": {"a\nb": "v", "org.x": "multi\nline\r"},
    "Volumes": {"/data": {}, "/bad vol": {}, "rel": {}},
}

RC_TAIL = """

if [ -s /etc/rc.local ]; then
    . /etc/rc.local
fi

if [ $# -gt 0 ]; then
    exec %s "$@"
else
    exec %s %s
fi
"""


class SquashfsImageConfig(SquashfsCase):
    """Issue 30.8: the SquashFS output keeps the image's Env, WorkingDir, Entrypoint and
    Cmd (and Volumes) as enroot's import stores them, so that the file alone runs as the
    image did; the dir and bundle outputs do not get them."""
    tools = ("unsquashfs", "sqfs2tar", "dash")

    def cat(self, img, path):
        cp = subprocess.run(["unsquashfs", "-cat", img, path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return cp.stdout.decode()

    def push_config(self, config, layers=None, repo="cfg/img"):
        layers = layers or [[{"path": "hello", "data": "hi\n"}]]
        return images.push_image(self.client, repo, "tag", layers,
                                 config_extra={"config": config})

    def run_rc(self, rc, *args):
        """rc run by dash with its paths moved below a scratch root and each exec printing
        its words: what the words are after a real sh has read the quoting."""
        root = self.path("rcroot")
        os.makedirs(root, exist_ok=True)
        text = (rc.replace('mkdir -p "', 'mkdir -p "$ROOT').replace('cd "', 'cd "$ROOT')
                .replace("/etc/rc.local", '"$ROOT"/etc/rc.local')
                .replace("exec ", "pwd; printf '[%s]' "))
        cp = subprocess.run(["dash", "-c", text, "sh"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"ROOT": root})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return cp.stdout.replace(root, "ROOT")

    def test_sqfs_records_the_entry_it_was_made_from(self):
        """Issue 41: /.fpull/platform.json names the chosen entry's platform and features,
        its manifest, and the index and reference it was chosen from; a single manifest
        records no index. The dir output gets no such file."""
        v2 = images.push_image(self.client, "cfg/multi", None, [[{"path": "k", "data": "v2"}]])
        v3 = images.push_image(self.client, "cfg/multi", None, [[{"path": "k", "data": "v3"}]])
        idx = images.push_index(self.client, "cfg/multi", "1.0", [
            (v2, {"os": "linux", "architecture": "amd64", "variant": "v2",
                  "features": ["x86-64-v2"]}),
            (v3, {"os": "linux", "architecture": "amd64", "features": ["x86-64-v3", "avx2"]})])
        img = self.path("multi.sqsh")
        self.fpull(["pull", "--format", "squashfs", "--features", "x86-64-v3",
                    self.ref("cfg/multi", "1.0"), img])
        rec = json.loads(self.cat(img, ".fpull/platform.json"))
        self.assertEqual(rec, {
            "mediaType": "application/vnd.fpull.sqsh.platform.v1+json",
            "reference": self.ref("cfg/multi", "1.0"), "index": idx["digest"],
            "manifest": v3["digest"],
            "platform": {"os": "linux", "architecture": "amd64",
                         "features": ["x86-64-v3", "avx2"]}})
        self.fpull(["pull", "--format", "squashfs", "--features", "x86-64-v2",
                    self.ref("cfg/multi", "1.0"), img, "--force"])
        rec = json.loads(self.cat(img, ".fpull/platform.json"))
        self.assertEqual((rec["manifest"], rec["platform"]),
                         (v2["digest"], {"os": "linux", "architecture": "amd64",
                                         "variant": "v2", "features": ["x86-64-v2"]}))
        single = images.push_image(self.client, "cfg/one", "tag", [[{"path": "k", "data": "1"}]],
                                   architecture="arm64")
        self.fpull(["pull", "--format", "squashfs", "--platform", "linux/arm64",
                    self.ref("cfg/one", "tag"), img, "--force"])
        rec = json.loads(self.cat(img, ".fpull/platform.json"))
        self.assertNotIn("index", rec)
        self.assertEqual((rec["manifest"], rec["platform"]),
                         (single["digest"], {"os": "linux", "architecture": "arm64"}))
        d = self.path("dirout")
        self.fpull(["pull", "--features", "x86-64-v2", self.ref("cfg/multi", "1.0"), d])
        self.assertFalse(os.path.exists(os.path.join(d, ".fpull")))

    def test_sqfs_stores_env_workdir_entrypoint_as_enroot_does(self):
        img_desc = self.push_config(HOSTILE_CONFIG)
        ref = self.ref("cfg/img", "tag")
        img, d = self.path("img.sqsh"), self.path("dirout")
        cp = self.fpull(["pull", "-v", "--format", "squashfs", ref, img], check=0)
        # Three strings cannot be written in enroot's formats: said once, not fatal.
        self.assertIn("fpull: warning: 3 Env entries or Volumes of the image not stored in "
                      "its /etc/environment or /etc/fstab", cp.stderr)
        self.assertEqual(self.cat(img, "etc/environment"),
                         'PATH=/usr/bin:/bin\nQUOTED=""q""\nSPACED=a b \nHOSTREF=${HOME}\n')
        prov = "docker://%s#cfg/img:tag@%s" % (self.reg.hostport, img_desc["digest"])
        wd = '"/srv/my \\"app\\" \\$x \\`y\\`"'
        entry = "'/bin/ent' 'it'\\''s'"
        self.assertEqual(self.cat(img, "etc/rc"),
                         "# enroot-provenance: %s\n# a b v\n# org.x multi line \n\n"
                         "mkdir -p %s 2> /dev/null\ncd %s && unset OLDPWD || exit 1" % (
                             prov, wd, wd)
                         + RC_TAIL % (entry, entry, "'run' '$HOME' '`x`' 'a\nb'"))
        self.assertEqual(self.cat(img, "etc/fstab"),
                         "${ENROOT_ROOTFS}/data /data none x-create=dir,bind,rw,nosuid,nodev\n")
        self.assertEqual(self.cat(img, "etc/rc.local"),
                         "# This file is sourced by /etc/rc when the container starts.\n"
                         "# It can be used to manipulate the entrypoint or the command of the "
                         "container.\n")
        # A real sh reads the words back as the image config has them.
        rc = self.cat(img, "etc/rc")
        here = 'ROOT/srv/my "app" $x `y`\n'
        self.assertEqual(self.run_rc(rc), here + "[/bin/ent][it's][run][$HOME][`x`][a\nb]")
        self.assertEqual(self.run_rc(rc, "x y", "z"), here + "[/bin/ent][it's][x y][z]")
        # WorkingDir is in the image (enroot start cannot make it in a read-only image), and
        # the five entries are counted with the layers'.
        tree = walk_tar(self.sqfs2tar(img))[0]
        self.assertEqual(tree['srv/my "app" $x `y`']["kind"], "dir")
        self.assertEqual(tree["etc/rc"]["mode"], 0o644)
        self.fpull(["pull", ref, d], check=0)
        # The four files, etc/, srv/, the WorkingDir, and /.fpull/platform.json in .fpull/.
        self.assertEqual(len(tree), len(walk_tree(d)[0]) + 9)
        n = re.search(r"(\d+) entries, ", cp.stderr)
        self.assertIsNotNone(n, cp.stderr)
        cpd = self.fpull(["pull", "-v", "--force", ref, d], check=0)
        self.assertEqual(int(n.group(1)), int(re.search(r"(\d+) entries, ", cpd.stderr).group(1))
                         + 6)  # the four files, the WorkingDir, the record
        # The directory output is the layers' tree only.
        self.assertFalse(os.path.lexists(os.path.join(d, "etc", "rc")))

    def test_sqfs_image_without_command_gets_enroots_default(self):
        self.push_config({})
        img = self.path("img.sqsh")
        self.fpull(["pull", "--format", "squashfs", self.ref("cfg/img", "tag"), img], check=0)
        self.assertEqual(self.cat(img, "etc/environment"), "")
        self.assertEqual(self.cat(img, "etc/fstab"), "")
        rc = self.cat(img, "etc/rc")
        self.assertIn('\nmkdir -p "/" 2> /dev/null\ncd "/" && unset OLDPWD || exit 1\n', rc)
        self.assertTrue(rc.endswith(RC_TAIL % ("", "", "'/bin/sh'")), rc)
        self.assertEqual(self.run_rc(rc), "ROOT\n[/bin/sh]")

    def test_sqfs_replaces_the_images_own_files(self):
        # As enroot's import: the image's /etc/environment and /etc/rc are not its config
        # (OCI runtimes never read them), and enroot start would read or run them.
        own = [{"path": "etc/passwd", "data": "root:x:0:0::/root:/bin/sh\n"},
               {"path": "etc/environment", "data": "FROM_IMAGE=1\n"},
               {"path": "etc/rc", "type": "symlink", "target": "/etc/passwd"},
               {"path": "etc/rc.local", "data": "touch /var/lock/subsys/local\n"},
               {"path": "etc/fstab", "data": "/dev/sda1 / ext4 defaults 0 1\n"}]
        self.push_config({"Env": ["A=1"], "Cmd": ["/bin/true"]}, [own])
        ref = self.ref("cfg/img", "tag")
        img, d = self.path("img.sqsh"), self.path("dirout")
        self.fpull(["pull", "--format", "squashfs", ref, img], check=0)
        self.fpull(["pull", ref, d], check=0)
        self.assertEqual(self.cat(img, "etc/environment"), "A=1\n")
        self.assertTrue(self.cat(img, "etc/rc").endswith(RC_TAIL % ("", "", "'/bin/true'")))
        self.assertEqual(self.cat(img, "etc/fstab"), "")
        self.assertNotIn("subsys", self.cat(img, "etc/rc.local"))
        tree = walk_tar(self.sqfs2tar(img))[0]
        self.assertEqual(tree["etc/rc"]["kind"], "file")
        self.assertEqual(self.cat(img, "etc/passwd"), "root:x:0:0::/root:/bin/sh\n")
        # The other outputs keep the layers' files as they are.
        self.assertEqual(self.read(d, "etc/environment"), b"FROM_IMAGE=1\n")
        self.assertEqual(os.readlink(os.path.join(d, "etc", "rc")), "/etc/passwd")

