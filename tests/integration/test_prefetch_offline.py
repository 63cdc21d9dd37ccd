"""prefetch, --offline and a shared cache, against the real registry."""
import concurrent.futures
import json
import os
import tempfile
import unittest

import cases
import fpull
import images
import registry


def layer(name, size=20000):
    return images.random_layer(name, size)


class PrefetchOffline(cases.RegistryCase):
    tmp_prefix = "fpull-prefetch-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.img = images.push_image(self.client, "hpc/app", "v1",
                                     [layer("a"), layer("b"), layer("c")])

    def ref(self, tag="v1", repo="hpc/app"):
        return "%s/%s:%s" % (self.reg.hostport, repo, tag)

    def test_prefetch_fills_cache_without_rootfs(self):
        cp, doc = fpull.run_json(["prefetch", "--cache-dir", self.cache, self.ref()],
                                 cwd=self.tmp)
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 1)
        self.assertEqual(doc[0]["manifest_digest"], self.img["digest"])
        self.assertNotIn("rootfs", doc[0])
        self.assertEqual(doc[0]["layers"], 3)
        self.assertGreater(doc[0]["bytes_downloaded"], 60000)
        for l in self.img["layers"]:
            p = os.path.join(self.cache, "blobs", "sha256", l["digest"].split(":")[1])
            self.assertTrue(os.path.isfile(p), p)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache"])  # no rootfs anywhere

    def test_prefetch_several_images_and_first_failure_decides(self):
        images.push_image(self.client, "hpc/other", "v2", [layer("z")])
        cp, doc = fpull.run_json(["prefetch", "--cache-dir", self.cache, self.ref(),
                                  self.ref("v2", "hpc/other")])
        self.assertEqual([d["reference"] for d in doc],
                         [self.ref(), self.ref("v2", "hpc/other")])
        cp = fpull.run(["prefetch", "--cache-dir", self.cache, self.ref(),
                        self.ref("nope")])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("nope", fpull.error_line(cp.stderr))

    def test_offline_pull_after_prefetch_with_registry_gone(self):
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, self.ref()], check=0)
        self.reg.stop()
        dest = os.path.join(self.tmp, "root")
        cp, doc = fpull.run_json(["pull", "--offline", "--cache-dir", self.cache, self.ref(),
                                  dest])
        self.assertEqual(doc["manifest_digest"], self.img["digest"])
        self.assertEqual(doc["bytes_downloaded"], 0)
        self.assertGreater(doc["bytes_from_cache"], 60000)
        with open(os.path.join(dest, "etc", "b")) as f:
            self.assertEqual(f.read(), "b\n")
        # By digest too.
        dest2 = os.path.join(self.tmp, "root2")
        ref = "%s/hpc/app@%s" % (self.reg.hostport, self.img["digest"])
        fpull.run(["pull", "-q", "--offline", "--cache-dir", self.cache, ref, dest2], check=0)
        self.assertTrue(os.path.isfile(os.path.join(dest2, "etc", "c")))

    def test_offline_unknown_tag_is_not_found(self):
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, self.ref()], check=0)
        cp = fpull.run(["pull", "--offline", "--cache-dir", self.cache, self.ref("v9"),
                        os.path.join(self.tmp, "r")])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("not in the cache", fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))
        # Nothing was asked of the registry for the offline attempt.
        with open(self.reg.log_path) as f:
            self.assertNotIn("/manifests/v9", f.read())

    def test_offline_with_empty_cache_touches_no_network(self):
        self.reg.stop()
        cp = fpull.run(["inspect", "--offline", "--cache-dir", self.cache, self.ref()])
        self.assertEqual(cp.returncode, 5, cp.stderr)

    def test_concurrent_prefetches_fetch_each_blob_once(self):
        def one(i):
            return fpull.run(["prefetch", "-q", "--cache-dir", self.cache, self.ref()])
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            results = list(ex.map(one, range(8)))
        for cp in results:
            self.assertEqual(cp.returncode, 0, cp.stderr)
        gets = self.reg.blob_gets()
        wanted = [l["digest"] for l in self.img["layers"]] + [self.img["config_digest"]]
        for d in wanted:
            self.assertEqual(gets.get(d), 1, (d, gets))
        # No temporary or lock debris under blobs/.
        blobs = os.listdir(os.path.join(self.cache, "blobs", "sha256"))
        wanted.append(self.img["digest"])  # the manifest is kept for --offline
        self.assertEqual(sorted(blobs), sorted(d.split(":")[1] for d in wanted))

    def test_second_pull_comes_from_cache(self):
        d1, d2 = os.path.join(self.tmp, "r1"), os.path.join(self.tmp, "r2")
        _, first = fpull.run_json(["pull", "--cache-dir", self.cache, self.ref(), d1])
        _, second = fpull.run_json(["pull", "--cache-dir", self.cache, self.ref(), d2])
        self.assertGreater(first["bytes_downloaded"], 0)
        self.assertEqual(second["bytes_downloaded"], 0)
        self.assertEqual(second["bytes_from_cache"],
                         first["bytes_downloaded"] + first["bytes_from_cache"])
        # Parents without an entry of their own get the time of the unpack, like tar.
        self.assertEqual(fpull.tree(d1, mtimes=False), fpull.tree(d2, mtimes=False))


    def corrupt_cached_layer(self):
        hexd = self.img["layers"][1]["digest"].split(":")[1]
        p = os.path.join(self.cache, "blobs", "sha256", hexd)
        with open(p, "r+b") as f:
            b = f.read(1)
            f.seek(0)
            f.write(bytes([b[0] ^ 0xff]))
        return p

    def test_corrupt_cached_layer_is_fetched_again_not_extracted(self):
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, self.ref()], check=0)
        self.corrupt_cached_layer()
        dest = os.path.join(self.tmp, "root")
        cp, doc = fpull.run_json(["pull", "--cache-dir", self.cache, self.ref(), dest])
        self.assertIn("corrupt", cp.stderr)
        self.assertGreaterEqual(doc["bytes_downloaded"], self.img["layers"][1]["size"])
        with open(os.path.join(dest, "etc", "b")) as f:
            self.assertEqual(f.read(), "b\n")

    def test_corrupt_cached_layer_offline_fails_and_leaves_no_dest(self):
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, self.ref()], check=0)
        p = self.corrupt_cached_layer()
        dest = os.path.join(self.tmp, "root")
        cp = fpull.run(["pull", "--offline", "--cache-dir", self.cache, self.ref(), dest])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn(self.img["layers"][1]["digest"], fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(dest))
        self.assertFalse(os.path.exists(p))  # the corrupt blob is gone from the cache


    def test_late_layer_failure_while_unpacking_leaves_nothing(self):
        # Layers are unpacked while later ones download: a corrupt last layer must still
        # fail the pull as an integrity error, with no DEST and no staging left.
        last = self.img["layers"][-1]["digest"]
        path = self.reg.blob_path(last)
        with open(path, "r+b") as f:
            f.seek(10)
            b = f.read(1)
            f.seek(10)
            f.write(bytes([b[0] ^ 0xff]))
        dest = os.path.join(self.tmp, "root")
        cp = fpull.run(["pull", "-j", "1", "--cache-dir", self.cache, self.ref(), dest])
        self.assertEqual(cp.returncode, 7, cp.stderr)
        self.assertIn(last, fpull.error_line(cp.stderr))
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache"])
        blobs = os.listdir(os.path.join(self.cache, "blobs", "sha256"))
        self.assertNotIn(last.split(":")[1], blobs)
        self.assertIn(self.img["layers"][0]["digest"].split(":")[1], blobs)


class NothingFits(unittest.TestCase):
    def test_no_entry_fits_names_the_closest(self):
        with registry.Registry() as reg:
            c = images.Client(reg.url)
            a = images.push_image(c, "gpu/tf", "a", [layer("a", 10)])
            b = images.push_image(c, "gpu/tf", "b", [layer("b", 10)])
            arm = images.push_image(c, "gpu/tf", "arm", [layer("c", 10)], architecture="arm64")
            idx = images.push_index(c, "gpu/tf", "1.0", [
                # Lacks as few features as b, but is for another architecture: not "closest".
                (arm, {"os": "linux", "architecture": "arm64", "features": ["nvidia-396-44"]}),
                (a, {"os": "linux", "architecture": "amd64",
                     "features": ["broadwell", "nvidia-396-44", "nv-compute-5-2"]}),
                (b, {"os": "linux", "architecture": "amd64", "features": ["nvidia-396-44"]}),
            ])
            ref = "%s/gpu/tf:1.0" % reg.hostport
            tmp = tempfile.mkdtemp()
            self.addCleanup(fpull.rmtree, tmp)
            dest = os.path.join(tmp, "out")
            cp = fpull.run(["pull", "--platform", "linux/amd64:haswell", ref, dest])
            self.assertEqual(cp.returncode, 3, cp.stderr)
            line = fpull.error_line(cp.stderr)
            self.assertIn(b["digest"], line)
            self.assertIn("nvidia-396-44", line)
            self.assertFalse(os.path.exists(dest))
            # inspect prints its table and exits 3 as well.
            cp = fpull.run(["inspect", "--platform", "linux/amd64:haswell", ref])
            self.assertEqual(cp.returncode, 3, cp.stderr)
            self.assertIn(b["digest"].split(":")[1][:12], cp.stdout)
            self.assertIn("chosen: none", cp.stdout)
            cp, doc = fpull.run_json(["inspect", "--platform", "linux/amd64:haswell", ref],
                                     check=3)
            self.assertIsNone(doc["chosen"])
            self.assertEqual(doc["index_digest"], idx["digest"])
            self.assertEqual([e["eligible"] for e in doc["entries"]], [False] * 3)
            self.assertEqual(doc["entries"][2]["missing"], ["nvidia-396-44"])
            self.assertEqual(sorted(doc["entries"][1]["missing"]),
                             ["broadwell", "nv-compute-5-2", "nvidia-396-44"])
            # With the driver it fits, and the more specific entry is not eligible.
            cp, doc = fpull.run_json(["inspect", "--features", "haswell,nvidia-396-44", ref])
            self.assertEqual(doc["chosen"], b["digest"])
            self.assertEqual([e["rank"] for e in doc["entries"]], [None, None, 1])


if __name__ == "__main__":
    unittest.main()
