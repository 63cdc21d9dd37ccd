"""`fpull pull` end to end against the real registry (issue 2, "Done when")."""
import json
import os
import platform as pyplatform
import stat
import subprocess
import unittest

import cases
import demo_index
import fpull
import images

HOST_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
             "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}.get(
                 pyplatform.machine(), pyplatform.machine())
OTHER_ARCH = "s390x" if HOST_ARCH != "s390x" else "arm64"

# A three-layer image: files, links, modes and mtimes, whiteouts across layers.
BASE = [
    {"path": "etc", "type": "dir", "mode": 0o755, "mtime": 1500000000},
    {"path": "etc/hostname", "data": "base\n", "mode": 0o644, "mtime": 1500000001},
    {"path": "etc/secret", "data": "s", "mode": 0o600, "mtime": 1500000002},
    {"path": "etc/gone", "data": "remove me"},
    {"path": "etc/hard-a", "data": "shared inode\n", "mode": 0o640, "mtime": 1500000003},
    {"path": "etc/hard-b", "type": "hardlink", "target": "etc/hard-a"},
    {"path": "bin", "type": "dir", "mode": 0o755},
    {"path": "bin/tool", "data": "#!/bin/sh\necho tool\n", "mode": 0o755,
     "mtime": 1500000004},
    {"path": "bin/sh-link", "type": "symlink", "target": "tool", "mtime": 1500000005},
    {"path": "abs-link", "type": "symlink", "target": "/etc/hostname"},
    {"path": "dangling", "type": "symlink", "target": "/does/not/exist"},
    {"path": "opq", "type": "dir", "mode": 0o750},
    {"path": "opq/old1", "data": "1"},
    {"path": "opq/sub", "type": "dir"},
    {"path": "opq/sub/old2", "data": "2"},
    {"path": "tree", "type": "dir"},
    {"path": "tree/a", "data": "a"},
    {"path": "tree/deep", "type": "dir"},
    {"path": "tree/deep/b", "data": "b"},
    {"path": "readonly", "type": "dir", "mode": 0o555, "mtime": 1500000006},
    {"path": "readonly/file", "data": "in a read-only dir", "mode": 0o444},
    {"path": "var/empty", "type": "dir", "mode": 0o1777},
]
MIDDLE = [
    images.whiteout("etc/gone"),
    images.whiteout("tree"),
    images.opaque("opq"),
    {"path": "opq/new", "data": "new in the opaque dir"},
    {"path": "etc/hostname", "data": "middle\n", "mode": 0o644, "mtime": 1600000000},
    {"path": "etc/hard-c", "type": "hardlink", "target": "etc/hard-a"},
    {"path": "usr/lib/x.so", "data": b"\x00\x01binary\xff", "mode": 0o755},
]
TOP = [
    {"path": "tree", "type": "dir"},
    {"path": "tree/c", "data": "c is back"},
    images.whiteout("usr/lib/x.so"),
    {"path": "etc/added", "data": "top\n"},
]
LAYERS = [BASE, MIDDLE, TOP]

EXPECTED_FILES = {
    "etc/hostname": b"middle\n",
    "etc/secret": b"s",
    "etc/hard-a": b"shared inode\n",
    "etc/hard-b": b"shared inode\n",
    "etc/hard-c": b"shared inode\n",
    "etc/added": b"top\n",
    "bin/tool": b"#!/bin/sh\necho tool\n",
    "opq/new": b"new in the opaque dir",
    "tree/c": b"c is back",
    "readonly/file": b"in a read-only dir",
}
ABSENT = ["etc/gone", "tree/a", "tree/deep", "opq/old1", "opq/sub", "usr/lib/x.so"]


def marker_layer(text):
    return [{"path": "etc", "type": "dir"}, {"path": "etc/which", "data": text + "\n"}]


class PullTestCase(cases.RegistryCase):
    """Starts a registry per test, a scratch dir (also cwd for fpull) and a blob cache."""

    tmp_prefix = "fpull-pull-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"FPULL_CACHE": self.cache}

    def ref(self, repo, tag_or_digest="latest"):
        sep = "@" if tag_or_digest.startswith("sha256:") else ":"
        return "%s/%s%s%s" % (self.reg.hostport, repo, sep, tag_or_digest)

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def fpull(self, args, check=None, **kw):
        kw.setdefault("cwd", self.tmp)
        env = dict(self.env)
        env.update(kw.pop("env", {}))
        cp = fpull.run(args, env=env, **kw)
        if check is not None and cp.returncode != check:
            self.fail("fpull %s: exit %d, expected %d\nstdout: %s\nstderr: %s\nregistry log "
                      "tail:\n%s" % (" ".join(args), cp.returncode, check, cp.stdout,
                                     cp.stderr, self.reg.log()[-1500:]))
        return cp

    def pull_json(self, args, check=0, **kw):
        cp = self.fpull(["pull", "--json"] + list(args), check=check, **kw)
        try:
            return cp, json.loads(cp.stdout)
        except ValueError:
            self.fail("pull --json: stdout is not one JSON object: %r\nstderr: %s"
                      % (cp.stdout, cp.stderr))

    def read(self, root, rel):
        with open(os.path.join(root, rel), "rb") as f:
            return f.read()

    def assert_failed(self, cp, code, *needles):
        self.assertEqual(cp.returncode, code, "stdout: %s\nstderr: %s" % (cp.stdout, cp.stderr))
        line = fpull.error_line(cp.stderr)
        for n in needles:
            self.assertIn(n, line)
        return line

    def assert_no_whiteouts(self, root):
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                self.assertFalse(n.startswith(".wh."), os.path.join(dirpath, n))

    def check_full_rootfs(self, root):
        for rel, data in EXPECTED_FILES.items():
            self.assertEqual(self.read(root, rel), data, rel)
        for rel in ABSENT:
            self.assertFalse(os.path.lexists(os.path.join(root, rel)), rel + " should be gone")
        self.assertEqual(sorted(os.listdir(os.path.join(root, "opq"))), ["new"])
        self.assertEqual(sorted(os.listdir(os.path.join(root, "tree"))), ["c"])
        self.assert_no_whiteouts(root)


class PullFormats(PullTestCase):
    def pull_and_check(self, fmt, compression):
        img = images.push_image(self.client, "x/y", "tag", LAYERS, fmt=fmt,
                                compression=compression)
        dest = self.path("out")
        cp, doc = self.pull_json([self.ref("x/y", "tag"), dest])
        self.assertEqual(doc["manifest_digest"], img["digest"])
        self.assertEqual(doc["layers"], 3)
        self.check_full_rootfs(dest)
        return dest

    def test_oci_gzip(self):
        self.pull_and_check("oci", "gzip")

    def test_oci_zstd(self):
        self.pull_and_check("oci", "zstd")

    def test_oci_uncompressed(self):
        self.pull_and_check("oci", None)

    def test_docker_gzip(self):
        self.pull_and_check("docker", "gzip")

    def test_docker_mixed_compression(self):
        self.pull_and_check("docker", ["gzip", "zstd", None])

    def test_links_modes_mtimes(self):
        dest = self.pull_and_check("oci", "gzip")
        s = lambda rel: os.lstat(os.path.join(dest, rel))
        # Hardlinks inside one layer, and to a lower layer's file, share the inode.
        self.assertEqual(s("etc/hard-a").st_ino, s("etc/hard-b").st_ino)
        self.assertEqual(s("etc/hard-a").st_ino, s("etc/hard-c").st_ino)
        self.assertEqual(os.readlink(os.path.join(dest, "bin/sh-link")), "tool")
        self.assertEqual(os.readlink(os.path.join(dest, "abs-link")), "/etc/hostname")
        self.assertEqual(os.readlink(os.path.join(dest, "dangling")), "/does/not/exist")
        modes = {"etc/secret": 0o600, "etc/hard-a": 0o640, "bin/tool": 0o755,
                 "etc/hostname": 0o644, "opq": 0o750, "readonly": 0o555,
                 "readonly/file": 0o444, "var/empty": 0o1777}
        for rel, mode in modes.items():
            self.assertEqual(oct(stat.S_IMODE(s(rel).st_mode)), oct(mode), rel)
        mtimes = {"etc/hostname": 1600000000, "etc/secret": 1500000002,
                  "bin/tool": 1500000004, "bin/sh-link": 1500000005,
                  "readonly": 1500000006, "readonly/file": 1700000000}
        for rel, mtime in mtimes.items():
            self.assertEqual(int(s(rel).st_mtime), mtime, rel)

    def test_single_layer_whiteout_of_dir_then_recreate(self):
        layers = [[{"path": "d/x", "data": "x"}, {"path": "d/y/z", "data": "z"}],
                  [images.whiteout("d")],
                  [{"path": "d", "type": "dir"}, {"path": "d/fresh", "data": "f"}],
                  [images.opaque("d"), {"path": "d/only", "data": "o"}]]
        images.push_image(self.client, "w/h", "t", layers)
        dest = self.path("wh")
        self.fpull(["pull", self.ref("w/h", "t"), dest], check=0)
        self.assertEqual(sorted(os.listdir(os.path.join(dest, "d"))), ["only"])
        self.assert_no_whiteouts(dest)


class PullIndex(PullTestCase):
    def push_multiarch(self, fmt):
        other = images.push_image(self.client, "multi/arch", None,
                                  [marker_layer(OTHER_ARCH)], fmt=fmt,
                                  architecture=OTHER_ARCH)
        arm = images.push_image(self.client, "multi/arch", None, [marker_layer("arm64")],
                                fmt=fmt, architecture="arm64", variant="v8")
        amd = images.push_image(self.client, "multi/arch", None, [marker_layer("amd64")],
                                fmt=fmt, architecture="amd64")
        # The host's entry is not first, so "take the first one" cannot pass.
        entries = [(other, {"os": "linux", "architecture": OTHER_ARCH}),
                   (arm, {"os": "linux", "architecture": "arm64", "variant": "v8"}),
                   (amd, {"os": "linux", "architecture": "amd64"})]
        idx = images.push_index(self.client, "multi/arch", "v1", entries, fmt=fmt)
        return idx, {"amd64": amd, "arm64": arm, OTHER_ARCH: other}

    def check_index(self, fmt):
        idx, imgs = self.push_multiarch(fmt)
        ref = self.ref("multi/arch", "v1")
        cp, doc = self.pull_json(["--platform", "linux/amd64", ref, self.path("amd")])
        self.assertEqual(self.read(self.path("amd"), "etc/which"), b"amd64\n")
        self.assertEqual(doc["index_digest"], idx["digest"])
        self.assertEqual(doc["manifest_digest"], imgs["amd64"]["digest"])
        self.assertEqual(doc["platform"]["os"], "linux")
        self.assertEqual(doc["platform"]["architecture"], "amd64")
        self.assertEqual(doc["platform"].get("features") or [], [])
        cp, doc = self.pull_json(["--platform", "linux/arm64/v8", ref, self.path("arm")])
        self.assertEqual(self.read(self.path("arm"), "etc/which"), b"arm64\n")
        self.assertEqual(doc["manifest_digest"], imgs["arm64"]["digest"])
        self.assertEqual((doc["platform"]["architecture"], doc["platform"]["variant"]),
                         ("arm64", "v8"))
        if HOST_ARCH in imgs:
            cp, doc = self.pull_json([ref, self.path("host")])
            self.assertEqual(self.read(self.path("host"), "etc/which"),
                             (HOST_ARCH + "\n").encode())
            self.assertEqual(doc["manifest_digest"], imgs[HOST_ARCH]["digest"])
            self.assertEqual(doc["platform"]["architecture"], HOST_ARCH)

    def test_oci_index_chooses_platform(self):
        self.check_index("oci")

    def test_docker_manifest_list_chooses_platform(self):
        self.check_index("docker")

    def test_index_with_no_entry_for_target_exits_3(self):
        self.push_multiarch("oci")
        cp = self.fpull(["pull", "--platform", "linux/ppc64le", self.ref("multi/arch", "v1"),
                         self.path("none")])
        self.assert_failed(cp, 3)
        self.assertFalse(os.path.lexists(self.path("none")))

    def test_single_platform_for_other_arch_exits_3(self):
        images.push_image(self.client, "other/arch", "t", [marker_layer("x")],
                          architecture=OTHER_ARCH)
        cp = self.fpull(["pull", self.ref("other/arch", "t"), self.path("o")])
        self.assert_failed(cp, 3)
        self.assertFalse(os.path.lexists(self.path("o")))


class PullJson(PullTestCase):
    def test_json_fields_and_cache(self):
        img = images.push_image(self.client, "json/img", "t1", LAYERS, fmt="oci")
        total = len(img["config"]) + sum(l["size"] for l in img["layers"])
        dest = self.path("first")
        cp, doc = self.pull_json([self.ref("json/img", "t1"), dest])
        for key in ("reference", "index_digest", "manifest_digest", "platform", "rootfs",
                    "layers", "bytes_downloaded", "bytes_from_cache"):
            self.assertIn(key, doc)
        self.assertEqual(doc["reference"], "%s/json/img:t1" % self.reg.hostport)
        self.assertIsNone(doc["index_digest"])
        self.assertEqual(doc["manifest_digest"], img["digest"])
        self.assertEqual((doc["platform"]["os"], doc["platform"]["architecture"]),
                         ("linux", "amd64"))
        self.assertTrue(os.path.isabs(doc["rootfs"]))
        self.assertEqual(os.path.realpath(doc["rootfs"]), os.path.realpath(dest))
        self.assertEqual(doc["layers"], 3)
        self.assertEqual(doc["bytes_downloaded"], total)
        self.assertEqual(doc["bytes_from_cache"], 0)
        for d in [img["config_digest"]] + [l["digest"] for l in img["layers"]]:
            blob = os.path.join(self.cache, "blobs", "sha256", d.split(":")[1])
            self.assertTrue(os.path.isfile(blob), "not in the cache: " + d)
        # Second pull into another DEST: everything from the cache.
        cp, doc2 = self.pull_json([self.ref("json/img", "t1"), self.path("second")])
        self.assertEqual(doc2["bytes_downloaded"], 0)
        self.assertEqual(doc2["bytes_from_cache"], total)
        self.assertEqual(doc2["manifest_digest"], img["digest"])
        # Directories no layer names get the time of the pull; compare all but mtimes.
        self.assertEqual(fpull.tree(self.path("first"), mtimes=False),
                         fpull.tree(self.path("second"), mtimes=False))
        # Nothing but the JSON object on stdout.
        self.assertEqual(cp.stdout.strip()[0], "{")
        self.assertEqual(cp.stdout.strip()[-1], "}")

    def test_json_for_index_entry_reports_its_platform(self):
        amd = images.push_image(self.client, "json/idx", None, [marker_layer("amd")])
        plat = {"os": "linux", "architecture": "amd64", "features": ["nvidia-396-44"]}
        plain = {"os": "linux", "architecture": "amd64"}
        plain_img = images.push_image(self.client, "json/idx", None, [marker_layer("plain")])
        idx = images.push_index(self.client, "json/idx", "t", [(amd, plat), (plain_img, plain)])
        cp, doc = self.pull_json(["--platform", "linux/amd64:nvidia-396-44",
                                  self.ref("json/idx", "t"), self.path("gpu")])
        self.assertEqual(doc["index_digest"], idx["digest"])
        self.assertEqual(doc["manifest_digest"], amd["digest"])
        self.assertEqual(doc["platform"]["features"], ["nvidia-396-44"])
        self.assertEqual(self.read(self.path("gpu"), "etc/which"), b"amd\n")
        cp, doc = self.pull_json(["--platform", "linux/amd64", self.ref("json/idx", "t"),
                                  self.path("cpu")])
        self.assertEqual(doc["manifest_digest"], plain_img["digest"])
        self.assertEqual(self.read(self.path("cpu"), "etc/which"), b"plain\n")

    def test_pull_by_digest(self):
        img = images.push_image(self.client, "by/digest", "t", [marker_layer("d")])
        cp, doc = self.pull_json([self.ref("by/digest", img["digest"]), self.path("d")])
        self.assertEqual(doc["reference"], "%s/by/digest@%s" % (self.reg.hostport,
                                                                img["digest"]))
        self.assertEqual(doc["manifest_digest"], img["digest"])
        self.assertEqual(self.read(self.path("d"), "etc/which"), b"d\n")
        both = "%s/by/digest:t@%s" % (self.reg.hostport, img["digest"])
        cp, doc = self.pull_json([both, self.path("d2")])
        self.assertEqual(doc["reference"], both)
        self.assertEqual(doc["manifest_digest"], img["digest"])

    def test_simultaneous_pulls_share_the_cache(self):
        img = images.push_image(self.client, "con/current", "t", LAYERS, fmt="oci")
        ref = self.ref("con/current", "t")
        procs = []
        for i in range(4):
            procs.append(subprocess.Popen(
                [fpull.binary(), "pull", "--json", ref, self.path("c%d" % i)],
                env=fpull.base_env(self.env), cwd=self.tmp,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        total = len(img["config"]) + sum(l["size"] for l in img["layers"])
        fetched = 0
        for p in procs:
            out, errs = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, errs.decode(errors="replace"))
            doc = json.loads(out)
            self.assertEqual(doc["bytes_downloaded"] + doc["bytes_from_cache"], total)
            fetched += doc["bytes_downloaded"]
        # Each blob is downloaded once however the processes interleave.
        self.assertEqual(fetched, total)
        first = fpull.tree(self.path("c0"), mtimes=False)
        for i in range(1, 4):
            self.assertEqual(fpull.tree(self.path("c%d" % i), mtimes=False), first)
        self.check_full_rootfs(self.path("c3"))
        blobs = os.path.join(self.cache, "blobs", "sha256")
        want = set(d.split(":")[1] for d in
                   [img["config_digest"]] + [l["digest"] for l in img["layers"]])
        # The cache may keep the manifest too (for --offline); nothing else may be there.
        got = set(os.listdir(blobs)) - {img["digest"].split(":")[1]}
        self.assertEqual(sorted(got), sorted(want), "temporary files left in the cache")


class PullErrors(PullTestCase):
    def test_unknown_tag_exits_5(self):
        images.push_image(self.client, "known/repo", "t", [marker_layer("k")])
        cp = self.fpull(["pull", self.ref("known/repo", "nosuchtag"), self.path("d")])
        self.assert_failed(cp, 5, "nosuchtag")
        self.assertFalse(os.path.lexists(self.path("d")))

    def test_unknown_repository_exits_5(self):
        cp = self.fpull(["pull", self.ref("no/such-repo", "t"), self.path("d")])
        self.assert_failed(cp, 5, "no/such-repo")
        self.assertFalse(os.path.lexists(self.path("d")))

    def test_bad_reference_exits_2(self):
        for bad in ("%s/Upper/Case:t" % self.reg.hostport, "%s/a//b:t" % self.reg.hostport,
                    "%s/a/b@sha256:zz" % self.reg.hostport, "x/y:bad:tag"):
            cp = self.fpull(["pull", bad, self.path("d")])
            self.assert_failed(cp, 2)
        self.assertFalse(os.path.lexists(self.path("d")))

    def test_dest_exists_without_force_exits_1_and_force_replaces(self):
        images.push_image(self.client, "dest/exists", "t", [marker_layer("new")])
        dest = self.path("dest")
        os.mkdir(dest)
        with open(os.path.join(dest, "old"), "w") as f:
            f.write("old content")
        cp = self.fpull(["pull", self.ref("dest/exists", "t"), dest])
        self.assert_failed(cp, 1)
        self.assertEqual(os.listdir(dest), ["old"])
        cp = self.fpull(["pull", "--force", self.ref("dest/exists", "t"), dest], check=0)
        self.assertFalse(os.path.exists(os.path.join(dest, "old")))
        self.assertEqual(self.read(dest, "etc/which"), b"new\n")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache", "dest"],
                         "staging or backup directory left beside DEST")

    def test_corrupt_blob_exits_7_and_leaves_nothing(self):
        img = images.push_image(self.client, "bad/blob", "t",
                                [marker_layer("good"), BASE], fmt="oci")
        victim = img["layers"][1]["digest"]
        path = self.reg.blob_path(victim)
        with open(path, "rb") as f:
            data = bytearray(f.read())
        # Same size, different bytes: only the digest check can catch it.
        data[len(data) // 2] ^= 0xFF
        with open(path, "wb") as f:
            f.write(data)
        dest = self.path("corrupt")
        cp = self.fpull(["pull", self.ref("bad/blob", "t"), dest])
        self.assert_failed(cp, 7, victim.split(":")[1][:12])
        self.assertFalse(os.path.lexists(dest))
        hexd = victim.split(":")[1]
        self.assertFalse(os.path.lexists(os.path.join(self.cache, "blobs", "sha256", hexd)))
        for dirpath, _, filenames in os.walk(self.cache):
            for n in filenames:
                p = os.path.join(dirpath, n)
                self.assertNotIn(hexd, n, "leftover for the corrupt blob: " + p)
                with open(p, "rb") as f:
                    self.assertNotEqual(f.read(), bytes(data), "corrupt bytes kept in " + p)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache"] if os.path.isdir(self.cache)
                         else [], "something left beside DEST")

    def test_failed_force_pull_keeps_old_dest(self):
        img = images.push_image(self.client, "keep/old", "t", [marker_layer("x"), BASE])
        victim = img["layers"][1]["digest"]
        with open(self.reg.blob_path(victim), "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x55]))
        dest = self.path("keep")
        os.mkdir(dest)
        with open(os.path.join(dest, "precious"), "w") as f:
            f.write("still here")
        cp = self.fpull(["pull", "--force", self.ref("keep/old", "t"), dest])
        self.assert_failed(cp, 7)
        self.assertEqual(os.listdir(dest), ["precious"])
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache", "keep"]
                         if os.path.isdir(self.cache) else ["keep"],
                         "staging directory left beside DEST")

    def test_unknown_digest_exits_5(self):
        images.push_image(self.client, "dig/missing", "t", [marker_layer("m")])
        cp = self.fpull(["pull", self.ref("dig/missing", "sha256:" + "ab" * 32),
                         self.path("d")])
        self.assert_failed(cp, 5)
        self.assertFalse(os.path.lexists(self.path("d")))

    def test_errors_are_one_line(self):
        cp = self.fpull(["pull", self.ref("no/repo", "t")])
        line = self.assert_failed(cp, 5)
        self.assertTrue(line.startswith("fpull: "))
        self.assertEqual(cp.stdout, "")


class PullDemoIndex(PullTestCase):
    """The choices scripts/demo shows, checked without building or printing anything."""

    CASES = [
        (["--platform", "linux/amd64:broadwell:nv-compute-5-2:nvidia-396-44"],
         "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"),
        (["--platform", "linux/amd64", "--features", "broadwell,nv-compute-5-2,nvidia-396-44"],
         "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"),
        (["--platform", "linux/amd64:skylake-avx512:nvidia-396-44"],
         "cv-nccl92-tf-dev:skylake512_1.12.0-rev8"),
        # Without features on this host's architecture --platform keeps what detection finds
        # (issue 33); --features '' asks for none.
        (["--platform", "linux/amd64", "--features", ""], "cv-tf-dev:1.12.0-rev11"),
    ]

    def check(self, fmt):
        demo = demo_index.build_demo(self.client, fmt=fmt)
        digests = {name: d for name, d, _ in demo["entries"]}
        ref = self.ref(demo["repo"], demo["tag"])
        for i, (opts, want) in enumerate(self.CASES):
            dest = self.path("demo%d" % i)
            cp, doc = self.pull_json(opts + [ref, dest])
            self.assertEqual(doc["index_digest"], demo["index_digest"])
            self.assertEqual(doc["manifest_digest"], digests[want], " ".join(opts))
            self.assertEqual(self.read(dest, "etc/fpull-demo").decode().splitlines()[0], want)
            want_features = dict(demo_index.DEMO_ROWS)[want]
            self.assertEqual(doc["platform"].get("features") or [], want_features)

    def test_demo_index_oci(self):
        self.check("oci")

    def test_demo_manifest_list_docker(self):
        self.check("docker")


class PullCli(PullTestCase):
    def test_shorthand_image_dest(self):
        img = images.push_image(self.client, "short/hand", "t", [marker_layer("short")])
        self.fpull([self.ref("short/hand", "t"), self.path("sh")], check=0)
        self.assertEqual(self.read(self.path("sh"), "etc/which"), b"short\n")
        cp = self.fpull(["--json", self.ref("short/hand", "t"), self.path("sh2")], check=0)
        self.assertEqual(json.loads(cp.stdout)["manifest_digest"], img["digest"])

    def test_default_dest_is_last_repo_component(self):
        images.push_image(self.client, "qnib/cv-tf", "t", [marker_layer("default")])
        cp = self.fpull(["pull", "--json", self.ref("qnib/cv-tf", "t")], check=0)
        self.assertEqual(self.read(self.path("cv-tf"), "etc/which"), b"default\n")
        self.assertEqual(os.path.realpath(json.loads(cp.stdout)["rootfs"]),
                         os.path.realpath(self.path("cv-tf")))

    def test_output_option(self):
        images.push_image(self.client, "out/opt", "t", [marker_layer("o")])
        self.fpull(["pull", "-o", self.path("o1"), self.ref("out/opt", "t")], check=0)
        self.fpull(["pull", "--output", self.path("o2"), self.ref("out/opt", "t")], check=0)
        self.assertEqual(self.read(self.path("o1"), "etc/which"), b"o\n")
        self.assertEqual(self.read(self.path("o2"), "etc/which"), b"o\n")

    def test_insecure_and_cache_dir_options(self):
        img = images.push_image(self.client, "opt/cache", "t", [marker_layer("c")])
        other = self.path("other-cache")
        self.fpull(["pull", "--insecure", "--cache-dir", other, self.ref("opt/cache", "t"),
                    self.path("c")], check=0)
        layer = img["layers"][0]["digest"].split(":")[1]
        self.assertTrue(os.path.isfile(os.path.join(other, "blobs", "sha256", layer)))
        self.assertFalse(os.path.lexists(os.path.join(self.cache, "blobs", "sha256", layer)))


if __name__ == "__main__":
    unittest.main()
