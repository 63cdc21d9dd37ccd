"""Conformance with the OCI image-spec: its schema test vectors and Markdown examples and
fpull's own index cases (tests/fixtures/conformance_index.json), each pushed to the real
registry (or, where the registry refuses the document, answered by the fault proxy), then
pulled and inspected for linux/amd64 with the expected exit code and choice (issue 23)."""
import copy
import hashlib
import json
import os
import urllib.parse

import cases
import faultproxy
import fpull
import images

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "fixtures", "conformance_index.json")
REPO = "conf/x"


def load_cases(prefix):
    with open(DATA) as f:
        return [c for c in json.load(f)["cases"] if c["name"].startswith(prefix)]


def marker(name):
    return [{"path": "marker", "type": "file", "data": name + "\n"}]


class Conformance(cases.RegistryCase):
    tmp_prefix = "fpull-conformance-"

    def setUp(self):
        super().setUp()
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        c = self.client
        self.images = {
            "amd64": images.push_image(c, REPO, None, [marker("amd64")]),
            "amd64b": images.push_image(c, REPO, None, [marker("amd64b")]),
            "ppc64le": images.push_image(c, REPO, None, [marker("ppc64le")],
                                         architecture="ppc64le"),
            "arm64": images.push_image(c, REPO, None, [marker("arm64")], architecture="arm64"),
            "three": images.push_image(c, REPO, None, [marker("three"),
                                                       [{"path": "b", "data": "b"}],
                                                       [{"path": "c", "data": "c"}]]),
        }
        three = self.images["three"]
        self.blobs = {"config": (three["config_digest"], len(three["config"])),
                      "empty": (c.put_blob(REPO, b"{}"), 2)}
        for i, layer in enumerate(three["layers"]):
            self.blobs["layer%d" % i] = (layer["digest"], layer["size"])
        art = {"schemaVersion": 2, "mediaType": images.OCI_MANIFEST,
               "artifactType": "application/vnd.example+type",
               "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                          "digest": self.blobs["empty"][0], "size": 2},
               "layers": [{"mediaType": "application/vnd.example+type",
                           "digest": self.blobs["layer0"][0], "size": self.blobs["layer0"][1]}]}
        body = json.dumps(art).encode()
        self.images["artifact"] = {"digest": c.put_manifest(REPO, images.sha256_digest(body), body,
                                                            images.OCI_MANIFEST),
                                   "size": len(body), "media_type": images.OCI_MANIFEST}
        self.by_digest = {v["digest"]: k for k, v in self.images.items()}

    # -- documents --------------------------------------------------------------------
    def fill(self, node):
        """node with its placeholders replaced (nested documents pushed first)."""
        if isinstance(node, list):
            return [self.fill(x) for x in node]
        if not isinstance(node, dict):
            return node
        node = {k: self.fill(v) if k != "@doc" else v for k, v in node.items()}
        src = None
        if "@image" in node:
            img = self.images[node.pop("@image")]
            src = (img["digest"], img["size"], img["media_type"])
        elif "@blob" in node:
            d, size = self.blobs[node.pop("@blob")]
            src = (d, size, None)
        elif "@doc" in node:
            doc = self.fill(node.pop("@doc"))
            body = json.dumps(doc, indent=2).encode()
            digest = self.client.put_manifest(REPO, images.sha256_digest(body), body,
                                              doc["mediaType"])
            src = (digest, len(body), doc["mediaType"])
        if src:
            for key, val in zip(("digest", "size", "mediaType"), src):
                if node.get(key) == "@":
                    node[key] = val
        return node

    def publish(self, case):
        """The reference under which the case's document is served."""
        tag = case["name"]
        if "raw" in case:
            body = case["raw"].encode()
        else:
            doc = self.fill(copy.deepcopy(case["document"]))
            body = json.dumps(doc, indent=2).encode()
        for name in case.get("missing", []):
            self.proxy.add(r"/manifests/" + self.images[name]["digest"], status=404,
                           headers={"Content-Type": "application/json"},
                           body=b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}')
        if case.get("serve") == "proxy":
            ct = case.get("content_type", doc.get("mediaType") if "raw" not in case else None)
            self.proxy.add(r"^/v2/%s/manifests/%s$" % (REPO, tag), status=200, body=body,
                           headers={"Content-Type": ct})
        else:
            self.client.put_manifest(REPO, tag, body, doc["mediaType"])
        return "%s/%s:%s" % (self.proxy.hostport, REPO, tag)

    # -- checks -----------------------------------------------------------------------
    def target_args(self, case):
        # A case whose registry lacks a manifest gets a cache of its own: a manifest named by
        # its digest comes from the cache when an earlier case left it there (issue 41).
        cache = "cache-" + case["name"] if case.get("missing") else "cache"
        args = ["--platform", "linux/amd64", "--cache-dir", os.path.join(self.tmp, cache)]
        if case.get("features"):
            args += ["--features", case["features"]]
        return args

    def check_pull(self, case, ref):
        want = case["expect"]
        dest = os.path.join(self.tmp, "root-" + case["name"])
        cp = fpull.run(["pull", "-q"] + self.target_args(case) + [ref, dest])
        self.assertEqual(cp.returncode, want["exit"], cp.stderr)
        if want["exit"] == 0:
            with open(os.path.join(dest, "marker")) as f:
                self.assertEqual(f.read().strip(), want["chosen"])
            return
        line = fpull.error_line(cp.stderr)
        if "error" in want:
            self.assertIn(want["error"], line)
        self.assertFalse(os.path.exists(dest))

    def check_inspect(self, case, ref):
        want = case.get("inspect")
        if not want:
            return
        cp = fpull.run(["inspect", "--json"] + self.target_args(case) + [ref])
        self.assertEqual(cp.returncode, want["exit"], cp.stderr)
        doc = json.loads(cp.stdout)
        entries = doc["entries"]
        chosen = self.by_digest.get(doc["chosen"]) if doc["chosen"] else None
        self.assertEqual(chosen, want["chosen"], doc)
        for row, part in want.get("reasons", {}).items():
            self.assertFalse(entries[int(row)]["eligible"])
            self.assertIn(part, entries[int(row)]["reason"], entries[int(row)])
        for row, src in want.get("sources", {}).items():
            self.assertEqual(entries[int(row)]["platform_source"], src)
            if src == "config":
                self.assertIsNotNone(entries[int(row)]["platform"]["architecture"])
        for row, parent in want.get("parents", {}).items():
            self.assertEqual(entries[int(row)]["parent"], entries[parent]["digest"])
        for row, rows in want.get("led_to", {}).items():
            self.assertEqual(entries[int(row)]["led_to"], [entries[r]["digest"] for r in rows])
        # The human table says the same: every reason given appears in it.
        cp = fpull.run(["inspect"] + self.target_args(case) + [ref])
        self.assertEqual(cp.returncode, want["exit"], cp.stderr)
        for part in want.get("reasons", {}).values():
            self.assertIn(part, cp.stdout)

    def run_cases(self, prefix):
        todo = load_cases(prefix)
        self.assertTrue(todo)
        for case in todo:
            with self.subTest(case=case["name"], source=case["source"]):
                ref = self.publish(case)
                self.check_pull(case, ref)
                self.check_inspect(case, ref)

    def test_image_spec_index_vectors(self):
        self.run_cases("spec-index-")

    def test_image_spec_descriptor_vectors(self):
        self.run_cases("spec-descriptor-")

    def test_image_spec_manifest_vectors(self):
        self.run_cases("spec-manifest-")

    def test_index_entry_selection(self):
        self.run_cases("index-")

    def test_manifest_checks(self):
        self.run_cases("manifest-")

    def test_schema1_one_message_one_code(self):
        self.run_cases("schema1-")
        lines = set()
        for case in load_cases("schema1-"):
            cp = fpull.run(["pull", "-q"] + self.target_args(case) +
                           ["%s/%s:%s" % (self.proxy.hostport, REPO, case["name"]),
                            os.path.join(self.tmp, "again")])
            line = fpull.error_line(cp.stderr)
            # Said once: neither the reference nor the message twice.
            self.assertEqual(line.count("schema 1"), 1, line)
            lines.add(line.split(": ", 2)[-1])
        self.assertEqual(len(lines), 1, lines)

    def test_error_messages_name_things_once(self):
        # Issue 23.7: "blob X: blob X: digest mismatch" and "REF: REF is ...".
        img = self.images["amd64"]
        layer = img["layers"][0]["digest"]
        self.proxy.add(r"/blobs/" + layer, replace_body=lambda b: b + bytes(100))
        ref = "%s/%s@%s" % (self.proxy.hostport, REPO, img["digest"])
        cp = fpull.run(["pull", "-q"] + self.target_args({}) + [ref, os.path.join(self.tmp, "r")])
        self.assertEqual(cp.returncode, 7, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("more data than", line)
        self.assertEqual(line.count(layer), 1, line)
        # A manifest whose bytes are not its digest: the reference once.
        self.proxy.add(r"/manifests/", replace_body=lambda b: b + b" ")
        cp = fpull.run(["pull", "-q"] + self.target_args({}) + [ref, os.path.join(self.tmp, "s")])
        self.assertEqual(cp.returncode, 7, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertEqual(line.count("%s/%s" % (self.proxy.hostport, REPO)), 1, line)

    def put_blob_sha512(self, data):
        digest = "sha512:" + hashlib.sha512(data).hexdigest()
        scope = self.client._repo_scope(REPO)
        st, rh, rb = self.client.request("POST", "/v2/%s/blobs/uploads/" % REPO, body=b"",
                                         scope=scope)
        self.assertEqual(st, 202, rb)
        loc = urllib.parse.urljoin(self.client.base + "/", rh["Location"])
        loc += ("&" if "?" in loc else "?") + urllib.parse.urlencode({"digest": digest})
        st, rh, rb = self.client.request("PUT", loc, body=data, scope=scope, headers={
            "Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        self.assertEqual(st, 201, rb)
        return digest

    def test_sha512_everywhere(self):
        # Issue 23.6: sha512 in references, descriptors, diff_ids, blob verification and
        # cache paths. The registry keeps blobs by sha512 but serves manifests by sha256
        # only, so the manifest's sha512 name is answered by the proxy.
        raw = images.tar_layer(marker("sha512"))
        layer = images.compress(raw, "gzip")
        layer_digest = self.put_blob_sha512(layer)
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers", "diff_ids": [
                                 "sha512:" + hashlib.sha512(raw).hexdigest()]}}).encode()
        config_digest = self.put_blob_sha512(config)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": images.OCI_MANIFEST,
            "config": {"mediaType": images.OCI_CONFIG, "digest": config_digest,
                       "size": len(config)},
            "layers": [{"mediaType": images.OCI_LAYER["gzip"], "digest": layer_digest,
                        "size": len(layer)}]}).encode()
        self.client.put_manifest(REPO, "sha512-image", manifest, images.OCI_MANIFEST)
        m512 = "sha512:" + hashlib.sha512(manifest).hexdigest()
        self.proxy.add(r"^/v2/%s/manifests/%s$" % (REPO, m512), status=200, body=manifest,
                       headers={"Content-Type": images.OCI_MANIFEST})
        index = json.dumps({"schemaVersion": 2, "mediaType": images.OCI_INDEX, "manifests": [
            {"mediaType": images.OCI_MANIFEST, "digest": m512, "size": len(manifest),
             "platform": {"os": "linux", "architecture": "amd64"}}]}).encode()
        self.proxy.add(r"^/v2/%s/manifests/sha512-index$" % REPO, status=200, body=index,
                       headers={"Content-Type": images.OCI_INDEX})
        cache = os.path.join(self.tmp, "cache")
        for ref in ("%s/%s:sha512-index" % (self.proxy.hostport, REPO),
                    "%s/%s@%s" % (self.proxy.hostport, REPO, m512)):
            dest = os.path.join(self.tmp, "root-%d" % len(ref))
            cp, res = fpull.run_json(["pull", "--platform", "linux/amd64", "--cache-dir", cache,
                                      ref, dest])
            self.assertEqual(res["manifest_digest"], m512)
            with open(os.path.join(dest, "marker")) as f:
                self.assertEqual(f.read().strip(), "sha512")
        for d in (layer_digest, config_digest, m512):
            self.assertTrue(os.path.isfile(os.path.join(cache, "blobs", "sha512", d[7:])), d)
        # Offline, from the cache alone.
        cp, res = fpull.run_json(["pull", "--offline", "--platform", "linux/amd64",
                                  "--cache-dir", cache,
                                  "%s/%s:sha512-index" % (self.proxy.hostport, REPO),
                                  os.path.join(self.tmp, "offline")])
        self.assertEqual(res["bytes_downloaded"], 0)
        # fpull cache sees blobs/sha512: the images' sizes count them, and rm removes them.
        tagref = "%s/%s:sha512-index" % (self.proxy.hostport, REPO)
        digref = "%s/%s@%s" % (self.proxy.hostport, REPO, m512)
        _, ls = fpull.run_json(["cache", "ls", "--json", "--cache-dir", cache])
        sizes = {im["reference"]: im["size"] for im in ls["images"]}
        self.assertGreaterEqual(sizes[tagref], len(layer) + len(config) + len(manifest), ls)
        self.assertGreaterEqual(sizes[digref], len(layer) + len(config) + len(manifest), ls)
        for ref in (tagref, digref):
            _, rm = fpull.run_json(["cache", "rm", "--json", "--cache-dir", cache, ref])
            self.assertEqual(rm["removed"], [ref])
        for d in (layer_digest, config_digest, m512):
            self.assertFalse(os.path.exists(os.path.join(cache, "blobs", "sha512", d[7:])), d)
        # A layer whose bytes are not its sha512 digest is an integrity failure.
        self.proxy.add(r"/blobs/" + layer_digest, replace_body=lambda b: bytes(len(b)))
        cp = fpull.run(["pull", "-q", "--platform", "linux/amd64", "--cache-dir",
                        os.path.join(self.tmp, "c2"), "%s/%s@%s" % (self.proxy.hostport, REPO,
                                                                     m512),
                        os.path.join(self.tmp, "bad")])
        self.assertEqual(cp.returncode, 7, cp.stderr)
        self.assertIn(layer_digest, fpull.error_line(cp.stderr))
