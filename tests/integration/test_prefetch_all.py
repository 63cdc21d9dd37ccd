"""prefetch --all: one login-node prefetch prepares the cache for nodes of every kind, and
pull --offline on each kind picks its own entry from it (issue 13.1), against the real
registry."""
import json
import os

import cases
import fpull
import images

AMD64 = {"os": "linux", "architecture": "amd64"}


def marker(text):
    return [{"path": "marker", "type": "file", "data": text + "\n"},
            {"path": "data/" + text, "type": "file", "data": os.urandom(4000)}]


class PrefetchAll(cases.RegistryCase):
    tmp_prefix = "fpull-prefetch-all-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        c = self.client
        self.plain = images.push_image(c, "hpc/app", None, [marker("plain")])
        self.bdw = images.push_image(c, "hpc/app", None, [marker("broadwell")])
        self.gpu = images.push_image(c, "hpc/app", None, [marker("gpu")])
        self.arm = images.push_image(c, "hpc/app", None, [marker("arm")], architecture="arm64")
        self.att = images.push_image(c, "hpc/app", None, [marker("attestation")])
        att = {"mediaType": images.OCI_MANIFEST, "digest": self.att["digest"],
               "size": self.att["size"],
               "platform": {"os": "unknown", "architecture": "unknown"},
               "annotations": {"vnd.docker.reference.type": "attestation-manifest",
                               "vnd.docker.reference.digest": self.plain["digest"]}}
        self.index = images.push_index(c, "hpc/app", "v1", [
            (self.plain, dict(AMD64)),
            (self.bdw, dict(AMD64, features=["broadwell"])),
            (self.gpu, dict(AMD64, features=["nvidia-396-44"])),
            (self.arm, {"os": "linux", "architecture": "arm64"}),
            att])
        self.ref = "%s/hpc/app:v1" % self.reg.hostport

    def blob_cached(self, digest):
        return os.path.isfile(os.path.join(self.cache, "blobs", "sha256", digest.split(":")[1]))

    def offline_pull(self, features, dest):
        return fpull.run_json(["pull", "--offline", "--cache-dir", self.cache,
                               "--features", features, self.ref, dest])

    def read_marker(self, dest):
        with open(os.path.join(dest, "marker")) as f:
            return f.read().strip()

    def test_one_prefetch_all_serves_two_node_kinds_offline(self):
        # The login node has neither feature: without --all only the plain entry is cached.
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache,
                                  "--platform", "linux/amd64", self.ref])
        self.assertEqual(len(doc), 1)
        got = {e["manifest_digest"]: e for e in doc[0]["entries"]}
        self.assertEqual(set(got), {self.plain["digest"], self.bdw["digest"],
                                    self.gpu["digest"]})
        self.assertEqual(got[self.gpu["digest"]]["platform"]["features"], ["nvidia-396-44"])
        self.assertEqual(doc[0]["index_digest"], self.index["digest"])
        self.assertIsNone(doc[0]["manifest_digest"])
        self.assertEqual(doc[0]["layers"], 3)
        # --platform kept it to linux/amd64: the arm64 entry was not fetched.
        self.assertFalse(self.blob_cached(self.arm["layers"][0]["digest"]))
        self.reg.stop()
        for features, want, img in (("broadwell", "broadwell", self.bdw),
                                    ("nvidia-396-44", "gpu", self.gpu)):
            dest = os.path.join(self.tmp, "root-" + want)
            cp, res = self.offline_pull(features, dest)
            self.assertEqual(res["manifest_digest"], img["digest"])
            self.assertEqual(res["bytes_downloaded"], 0)
            self.assertEqual(self.read_marker(dest), want)

    def test_all_without_platform_takes_every_image_entry(self):
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, self.ref])
        digests = sorted(e["manifest_digest"] for e in doc[0]["entries"])
        self.assertEqual(digests, sorted(i["digest"] for i in
                                         (self.plain, self.bdw, self.gpu, self.arm)))
        for img in (self.plain, self.bdw, self.gpu, self.arm):
            self.assertTrue(self.blob_cached(img["config_digest"]))
            self.assertTrue(self.blob_cached(img["layers"][0]["digest"]))
        # The attestation entry (unknown/unknown) was never asked for.
        self.assertFalse(self.blob_cached(self.att["layers"][0]["digest"]))
        with open(self.reg.log_path) as f:
            gets = [ln for ln in f if '"GET /v2/hpc/app/manifests/' in ln]
        self.assertFalse([ln for ln in gets if self.att["digest"] in ln])
        # A second run finds everything in the cache.
        cp, again = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, self.ref])
        self.assertEqual(again[0]["bytes_downloaded"], 0)

    def test_offline_miss_names_the_entry_and_how_to_fetch_it(self):
        # A plain prefetch caches only this node's entry; a GPU node then misses.
        fpull.run(["prefetch", "-q", "--cache-dir", self.cache, "--platform", "linux/amd64",
                   self.ref], check=0)
        self.reg.stop()
        dest = os.path.join(self.tmp, "gpu")
        cp = fpull.run(["pull", "--offline", "--cache-dir", self.cache, "--features",
                        "nvidia-396-44", self.ref, dest])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn(self.gpu["digest"], line)
        self.assertIn("linux/amd64", line)
        self.assertIn("nvidia-396-44", line)
        self.assertIn("not in the cache", line)
        # The commands to type fill the cache this pull read (issue 43.11).
        self.assertIn("'fpull prefetch --all --cache-dir %s %s'" % (self.cache, self.ref), line)
        self.assertIn("'fpull prefetch --cache-dir %s --features nvidia-396-44 %s'" % (
            self.cache, self.ref), line)
        self.assertFalse(os.path.exists(dest))
        # Without --cache-dir (the default cache), none is named.
        cp = fpull.run(["pull", "--offline", "--features", "nvidia-396-44", self.ref, dest],
                       env={"FPULL_CACHE": self.cache})
        line = fpull.error_line(cp.stderr)
        self.assertIn("'fpull prefetch --all %s'" % self.ref, line)
        self.assertNotIn("--cache-dir", line)

    def test_entry_fpull_cannot_unpack_is_passed_over(self):
        foreign = images.push_image(self.client, "hpc/win", None, [
            {"blob": b"not a layer fpull unpacks",
             "media_type": "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
             "diff_id": "sha256:" + "b" * 64}], os="windows")
        linux = images.push_image(self.client, "hpc/win", None, [marker("linux")])
        images.push_index(self.client, "hpc/win", "v1", [
            (foreign, {"os": "windows", "architecture": "amd64"}), (linux, dict(AMD64))])
        ref = "%s/hpc/win:v1" % self.reg.hostport
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual([e["manifest_digest"] for e in doc[0]["entries"]], [linux["digest"]])
        self.assertIn("passed over", cp.stderr)
        self.assertIn(foreign["digest"], cp.stderr)
        self.assertFalse(self.blob_cached(foreign["layers"][0]["digest"]))

    def test_all_with_platform_of_no_entry_is_no_match(self):
        cp = fpull.run(["prefetch", "--all", "--cache-dir", self.cache,
                        "--platform", "linux/ppc64le", self.ref])
        self.assertEqual(cp.returncode, 3, cp.stderr)
        self.assertIn("linux/ppc64le", fpull.error_line(cp.stderr))

    def test_all_of_a_single_manifest_image(self):
        img = images.push_image(self.client, "hpc/one", "v1", [marker("one")],
                                architecture="arm64")
        ref = "%s/hpc/one:v1" % self.reg.hostport
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual(doc[0]["manifest_digest"], img["digest"])
        self.assertEqual([e["manifest_digest"] for e in doc[0]["entries"]], [img["digest"]])
        self.assertTrue(self.blob_cached(img["layers"][0]["digest"]))

    def manifest_gets(self, digest):
        with open(self.reg.log_path) as f:
            return sum(1 for ln in f if '"GET /v2/' in ln and "/manifests/" + digest in ln)

    def blob_gets(self, digest):
        return self.reg.blob_gets().get(digest, 0)

    def test_many_entries_naming_one_manifest_fetch_it_once(self):
        # Issue 20.8: 2000 entries naming one manifest made 4002 manifest GETs and hashed
        # its layer 2000 times.
        entry = {"mediaType": images.OCI_MANIFEST, "digest": self.plain["digest"],
                 "size": self.plain["size"], "platform": dict(AMD64)}
        images.push_index(self.client, "hpc/app", "many", [dict(entry)] * 2000)
        ref = "%s/hpc/app:many" % self.reg.hostport
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual([e["manifest_digest"] for e in doc[0]["entries"]],
                         [self.plain["digest"]])
        self.assertEqual(self.manifest_gets(self.plain["digest"]), 1)
        self.assertEqual(self.blob_gets(self.plain["layers"][0]["digest"]), 1)
        layer, config = self.plain["layers"][0]["size"], len(self.plain["config"])
        self.assertEqual(doc[0]["bytes_downloaded"], layer + config)
        # From the cache: each blob verified (hashed) once, not once per entry.
        cp, again = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual(again[0]["bytes_downloaded"], 0)
        self.assertEqual(again[0]["bytes_from_cache"], layer + config)
        # And the manifest, named by its digest, is the cache's too (issue 41).
        self.assertEqual(self.manifest_gets(self.plain["digest"]), 1)

    def test_shared_layer_fetched_once_across_entries(self):
        base = [{"path": "base", "type": "file", "data": os.urandom(3000)}]
        a = images.push_image(self.client, "hpc/app", None, [base, marker("a")])
        b = images.push_image(self.client, "hpc/app", None, [base, marker("b")],
                              architecture="arm64")
        images.push_index(self.client, "hpc/app", "shared", [
            (a, dict(AMD64)), (b, {"os": "linux", "architecture": "arm64"})])
        ref = "%s/hpc/app:shared" % self.reg.hostport
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual(len(doc[0]["entries"]), 2)
        self.assertEqual(a["layers"][0]["digest"], b["layers"][0]["digest"])
        self.assertEqual(self.blob_gets(a["layers"][0]["digest"]), 1)
        cp, again = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        want = sum(l["size"] for l in a["layers"]) + len(a["config"]) + \
            b["layers"][1]["size"] + len(b["config"])
        self.assertEqual(again[0]["bytes_from_cache"], want)

    def test_nested_index_followed_and_artifact_passed_over(self):
        # Issue 20.8: an entry that is itself an index failed the whole run.
        nested = images.push_index(self.client, "hpc/app", None, [
            (self.bdw, dict(AMD64, features=["broadwell"])),
            (self.arm, {"os": "linux", "architecture": "arm64"})])
        empty = self.client.put_blob("hpc/app", b"{}")
        art = json.dumps({"schemaVersion": 2, "mediaType": images.OCI_MANIFEST,
                          "artifactType": "application/vnd.example+type",
                          "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                                     "digest": empty, "size": 2},
                          "layers": [{"mediaType": "application/vnd.example+type",
                                      "digest": self.att["layers"][0]["digest"],
                                      "size": self.att["layers"][0]["size"]}]}).encode()
        art_digest = self.client.put_manifest("hpc/app", images.sha256_digest(art), art,
                                              images.OCI_MANIFEST)
        images.push_index(self.client, "hpc/app", "nested", [
            {"mediaType": images.OCI_INDEX, "digest": nested["digest"], "size": nested["size"]},
            {"mediaType": images.OCI_MANIFEST, "digest": art_digest, "size": len(art),
             "platform": dict(AMD64)},
            (self.plain, dict(AMD64))])
        ref = "%s/hpc/app:nested" % self.reg.hostport
        cp, doc = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual([e["manifest_digest"] for e in doc[0]["entries"]],
                         [self.bdw["digest"], self.arm["digest"], self.plain["digest"]])
        self.assertIn("not a container image", cp.stderr)
        self.assertIn(art_digest, cp.stderr)
        self.assertFalse(self.blob_cached(self.att["layers"][0]["digest"]))
        # --platform keeps the nested index's arm64 entry only.
        cp, doc = fpull.run_json(["prefetch", "--all", "--platform", "linux/arm64",
                                  "--cache-dir", os.path.join(self.tmp, "c2"), ref])
        self.assertEqual([e["manifest_digest"] for e in doc[0]["entries"]], [self.arm["digest"]])
        # Offline, a node finds its entry through the nested index in the cache.
        self.reg.stop()
        dest = os.path.join(self.tmp, "bdw")
        cp, res = fpull.run_json(["pull", "--offline", "--cache-dir", self.cache,
                                  "--features", "broadwell", ref, dest])
        self.assertEqual(res["manifest_digest"], self.bdw["digest"])
        self.assertEqual(self.read_marker(dest), "broadwell")

    def test_more_than_1024_distinct_images_refused_before_fetching(self):
        # Issue 20.8: a bound on entries. 1025 distinct manifests (one image, annotations
        # apart) is refused before any of them is fetched.
        doc = json.loads(self.plain["manifest"])
        entries = []
        for i in range(1025):
            doc["annotations"] = {"n": str(i)}
            body = json.dumps(doc).encode()
            digest = self.client.put_manifest("hpc/app", images.sha256_digest(body), body,
                                              images.OCI_MANIFEST)
            entries.append({"mediaType": images.OCI_MANIFEST, "digest": digest,
                            "size": len(body), "platform": dict(AMD64)})
        images.push_index(self.client, "hpc/app", "wide", entries)
        ref = "%s/hpc/app:wide" % self.reg.hostport
        cp = fpull.run(["prefetch", "--all", "--cache-dir", self.cache, ref])
        self.assertEqual(cp.returncode, 8, cp.stderr)
        self.assertIn("more than 1024 distinct images", fpull.error_line(cp.stderr))
        self.assertEqual(sum(self.manifest_gets(e["digest"]) for e in entries), 0)
        self.assertFalse(self.blob_cached(self.plain["layers"][0]["digest"]))
        # 1024 of them are within the bound, and the layer is fetched once.
        images.push_index(self.client, "hpc/app", "wide1024", entries[:1024])
        cp, out = fpull.run_json(["prefetch", "--all", "--cache-dir", self.cache,
                                  "%s/hpc/app:wide1024" % self.reg.hostport])
        self.assertEqual(len(out[0]["entries"]), 1024)
        self.assertEqual(self.blob_gets(self.plain["layers"][0]["digest"]), 1)
