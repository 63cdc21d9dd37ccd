"""pull --max-unpacked SIZE and the config's max-unpacked: (issue 29.5, contract v5): a layer of
a few hundred KiB that unpacks to 300 MB of zeros stops at the entry that crosses the limit
with exit 8, one line naming the image, the layer and the limit, and nothing beside DEST,
for the directory, the bundle and the SquashFS output; a pull under the limit works; the
CLI wins over the config; a bad size is exit 2. Against the real registry."""
import hashlib
import os
import resource
import subprocess
import tarfile
import threading
import zlib

import fpull
import images
from test_pull_basic import PullTestCase

BOMB_SIZE = 300 * 1000 * 1000
CHUNK = 1 << 20
# A pull that stops where it should writes nothing near this much: a file this large in
# DEST (or anywhere) fails the write (EFBIG), never exit 8.
FSIZE_LIMIT = 16 << 20

_bombs = {}


def _tar_stream(name, size):
    """The pieces of a one-file tar (PAX) holding SIZE zeros, without holding them."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = 1700000000
    yield info.tobuf(format=tarfile.PAX_FORMAT)
    zeros = bytes(CHUNK)
    left = size
    while left:
        n = min(left, CHUNK)
        yield zeros if n == CHUNK else bytes(n)
        left -= n
    yield bytes((-size) % 512 + 1024)


def bomb(compression):
    """{"blob", "diff_id", "compression"} for push_image: BOMB_SIZE zeros in one file, built
    once per process as a stream (never the whole tar in memory)."""
    if compression in _bombs:
        return _bombs[compression]
    h = hashlib.sha256()
    if compression == "gzip":
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = []
        for piece in _tar_stream("big/zeros", BOMB_SIZE):
            h.update(piece)
            parts.append(z.compress(piece))
        parts.append(z.flush())
        blob = b"".join(parts)
    else:
        p = subprocess.Popen(["zstd", "-q", "-c", "-3", "--no-progress"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)

        def feed():
            for piece in _tar_stream("big/zeros", BOMB_SIZE):
                h.update(piece)
                p.stdin.write(piece)
            p.stdin.close()

        t = threading.Thread(target=feed)
        t.start()
        blob = p.stdout.read()
        t.join()
        assert p.wait() == 0
    assert len(blob) < 1 << 20, len(blob)
    _bombs[compression] = {"blob": blob, "diff_id": "sha256:" + h.hexdigest(),
                           "compression": compression}
    return _bombs[compression]


def small_fsize():
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))


# Two layers of 30000 + 2 bytes of file content each: 60004 bytes in all.
SMALL = [[{"path": "data/a", "data": bytes(range(250)) * 120}, {"path": "etc/a", "data": "a\n"},
          {"path": "lib", "type": "dir"}, {"path": "lib/link", "type": "symlink",
                                           "target": "../data/a"}],
         [{"path": "data/b", "data": bytes(range(200)) * 150}, {"path": "etc/b", "data": "b\n"},
          {"path": "data/hard", "type": "hardlink", "target": "data/a"}]]


class MaxUnpacked(PullTestCase):
    tmp_prefix = "fpull-maxunpacked-"

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        os.mkdir(self.out)

    def push(self, layers, repo):
        return images.push_image(self.client, repo, "tag", layers, compression="gzip")

    def push_bomb(self, compression):
        """An image whose first layer is ordinary and whose second is the bomb."""
        return self.push([SMALL[0], bomb(compression)], "bomb/zeros")

    def pull_bounded(self, args, env=None):
        """fpull pull ARGS under a 16 MiB limit on the size of any file it writes."""
        e = dict(self.env)
        e.update(env or {})
        cp = subprocess.run([fpull.binary(), "pull"] + list(args), env=fpull.base_env(e),
                            cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", preexec_fn=small_fsize, timeout=120)
        return cp

    def assert_refused(self, cp, ref, layer, limit_text):
        line = self.assert_failed(cp, 8, ref, "layer %s: " % layer["digest"],
                                  "unpacked content exceeds the max-unpacked limit of "
                                  + limit_text, "entry big/zeros")
        self.assertEqual(os.listdir(self.out), [], "left beside DEST: %s" % line)

    def check_bomb(self, fmt, compression):
        img = self.push_bomb(compression)
        ref = self.ref("bomb/zeros", "tag")
        dest = os.path.join(self.out, "dest")
        cp = self.pull_bounded(["--format", fmt, "--max-unpacked", "50M", ref, dest])
        self.assert_refused(cp, ref, img["layers"][1], "50 MiB")
        # The cache holds the blobs as they were verified: a second, offline pull stops
        # at the same place.
        cp = self.pull_bounded(["--offline", "--format", fmt, "--max-unpacked", "50M", ref, dest])
        self.assert_refused(cp, ref, img["layers"][1], "50 MiB")

    def test_bomb_directory_gzip(self):
        self.check_bomb("dir", "gzip")

    def test_bomb_directory_zstd(self):
        self.check_bomb("dir", "zstd")

    def test_bomb_squashfs(self):
        self.check_bomb("squashfs", "zstd")

    def test_bomb_bundle(self):
        self.check_bomb("bundle", "gzip")

    def test_bomb_force_keeps_the_old_dest(self):
        """With --force an existing DEST is replaced only by a complete rootfs."""
        self.push(SMALL, "small/img")
        dest = os.path.join(self.out, "dest")
        self.fpull(["pull", self.ref("small/img", "tag"), dest], check=0)
        before = fpull.tree(dest)
        img = self.push_bomb("zstd")
        ref = self.ref("bomb/zeros", "tag")
        cp = self.pull_bounded(["--force", "--max-unpacked", "100M", ref, dest])
        self.assert_failed(cp, 8, ref, img["layers"][1]["digest"], "limit of 100 MiB")
        self.assertEqual(os.listdir(self.out), ["dest"])
        self.assertEqual(fpull.tree(dest), before)

    def test_under_the_limit_pulls_and_the_sum_spans_layers(self):
        """60004 bytes of file content in two layers (a hard link and a symlink add
        nothing): 59K (60416) is enough, 58K (59392) is not, and it is the second layer's
        file that crosses it."""
        img = self.push(SMALL, "small/img")
        ref = self.ref("small/img", "tag")
        dest = os.path.join(self.out, "dest")
        self.fpull(["pull", "--max-unpacked", "59K", ref, dest], check=0)
        self.assertEqual(len(self.read(dest, "data/hard")), 30000)
        sq = os.path.join(self.out, "img.sqsh")
        self.fpull(["pull", "--format", "squashfs", "--max-unpacked", "59K", ref, sq], check=0)
        dest2 = os.path.join(self.out, "dest2")
        cp = self.fpull(["pull", "--max-unpacked", "58K", ref, dest2])
        self.assert_failed(cp, 8, ref, "layer %s: " % img["layers"][1]["digest"],
                           "limit of 58 KiB (entry data/b would bring it to 60002 bytes)")
        self.assertEqual(sorted(os.listdir(self.out)), ["dest", "img.sqsh"])

    def write_config(self, text):
        path = self.path("config.yaml")
        with open(path, "w") as f:
            f.write(text)
        return {"FPULL_CONFIG": path}

    def test_config_key_and_the_cli_wins(self):
        img = self.push(SMALL, "small/img")
        ref = self.ref("small/img", "tag")
        env = self.write_config("max-unpacked: 58K\n")
        cp = self.fpull(["pull", ref, os.path.join(self.out, "d1")], env=env)
        self.assert_failed(cp, 8, ref, img["layers"][1]["digest"], "limit of 58 KiB")
        self.assertEqual(os.listdir(self.out), [])
        # The command line wins: a larger limit, or 0 for none at all.
        self.fpull(["pull", "--max-unpacked", "59K", ref, os.path.join(self.out, "d2")],
                   env=env, check=0)
        self.fpull(["pull", "--max-unpacked", "0", ref, os.path.join(self.out, "d3")], env=env,
                   check=0)
        # ... and a smaller one too.
        env = self.write_config("max-unpacked: 1G\n")
        cp = self.fpull(["pull", "--max-unpacked", "58K", ref, os.path.join(self.out, "d4")],
                        env=env)
        self.assert_failed(cp, 8, "limit of 58 KiB")
        self.assertEqual(sorted(os.listdir(self.out)), ["d2", "d3"])

    def test_config_bad_size_is_exit_2(self):
        env = self.write_config("detect: true\nmax-unpacked: 50X\n")
        cp = self.fpull(["pull", self.ref("small/img", "tag"), os.path.join(self.out, "d")],
                        env=env)
        self.assert_failed(cp, 2, "config.yaml:2:15: max-unpacked: '50X' is not a size")
        self.assertEqual(os.listdir(self.out), [])

    def test_bad_sizes_are_usage_errors(self):
        ref = self.ref("small/img", "tag")
        for bad in ("50X", "500", "-5M", "", "M", "1.5.2G", "99999999P"):
            cp = self.fpull(["pull", "--max-unpacked", bad, ref, os.path.join(self.out, "d")])
            self.assert_failed(cp, 2, "fpull: pull: --max-unpacked: ", "'%s'" % bad)
        self.assertEqual(os.listdir(self.out), [])
        # Checked before any request: the registry never saw one.
        self.assertNotIn("small/img", self.reg.log())
        cp = self.fpull(["pull", "--max-unpacked"])
        self.assert_failed(cp, 2, "option needs an argument")
