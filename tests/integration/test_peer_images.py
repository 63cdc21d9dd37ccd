"""Images as peers see them (issue 33), against the real registry: Docker v2 manifests with
moby's legacy config media types pull, an index entry is checked by kind (image manifest or
index, Docker v2 and OCI standing for each other), an entry that is not chosen never fails
the index, and an attestation manifest pulled by digest is exit 8."""
import json
import os

import cases
import fpull
import images

AMD64 = {"os": "linux", "architecture": "amd64"}
ARM64 = {"os": "linux", "architecture": "arm64"}


def marker(text):
    return [{"path": "marker", "type": "file", "data": text + "\n"}]


class PeerImages(cases.RegistryCase):
    tmp_prefix = "fpull-peer-images-"

    def pull(self, ref, *opts, check=0):
        dest = os.path.join(self.tmp, "out-%d" % len(os.listdir(self.tmp)))
        cp = fpull.run(["pull", "--cache-dir", os.path.join(self.tmp, "cache")] + list(opts)
                       + [ref, dest], check=check)
        return cp, dest

    def read_marker(self, dest):
        with open(os.path.join(dest, "marker")) as f:
            return f.read().strip()

    def repush(self, img, change):
        """img's manifest with change(dict) applied, pushed by digest: (digest, body)."""
        doc = json.loads(img["manifest"])
        change(doc)
        body = json.dumps(doc, indent=2).encode()
        digest = self.client.put_manifest("peer/app", images.sha256_digest(body), body,
                                          doc["mediaType"])
        return digest, body

    def test_docker_v2_legacy_config_types_pull(self):
        # moby pulls these as image configs; before issue 33 each was exit 8 "an artifact"
        # (the image-spec's library/docker@sha256:888206c7... vector has octet-stream).
        img = images.push_image(self.client, "peer/app", None, [marker("legacy")], fmt="docker")
        for ct in ("application/octet-stream", "application/json", "text/html", ""):
            def change(doc, ct=ct):
                doc["config"]["mediaType"] = ct
            digest, _ = self.repush(img, change)
            cp, dest = self.pull("%s/peer/app@%s" % (self.reg.hostport, digest))
            self.assertEqual(self.read_marker(dest), "legacy", ct)
        # An OCI manifest with such a config is still an artifact: the legacy types are
        # Docker v2's only.
        oci = images.push_image(self.client, "peer/app", None, [marker("oci")])
        digest, _ = self.repush(oci, lambda d: d["config"].update(
            mediaType="application/octet-stream"))
        cp, _ = self.pull("%s/peer/app@%s" % (self.reg.hostport, digest), check=8)
        self.assertIn("not a container image", cp.stderr)

    def test_entry_checked_by_kind(self):
        # An OCI index whose entries hold Docker v2 manifests (go-containerregistry's
        # test_index layout), one without a platform, which is fetched to learn it: before
        # issue 33 that failed the whole index with exit 7 for every platform.
        amd = images.push_image(self.client, "peer/app", None, [marker("amd")], fmt="docker")
        arm = images.push_image(self.client, "peer/app", None, [marker("arm")], fmt="docker",
                                architecture="arm64")
        images.push_index(self.client, "peer/app", "mixed", [
            {"mediaType": images.OCI_MANIFEST, "digest": amd["digest"], "size": amd["size"]},
            {"mediaType": images.OCI_MANIFEST, "digest": arm["digest"], "size": arm["size"],
             "platform": ARM64}])
        ref = "%s/peer/app:mixed" % self.reg.hostport
        cp, dest = self.pull(ref, "--platform", "linux/amd64")
        self.assertEqual(self.read_marker(dest), "amd")
        cp, dest = self.pull(ref, "--platform", "linux/arm64")
        self.assertEqual(self.read_marker(dest), "arm")
        # The image-spec's reverse: a Docker list with OCI children.
        oci = images.push_image(self.client, "peer/app", None, [marker("oci-child")])
        images.push_index(self.client, "peer/app", "list", [
            {"mediaType": images.DOCKER_MANIFEST, "digest": oci["digest"],
             "size": oci["size"], "platform": AMD64}], fmt="docker")
        cp, dest = self.pull("%s/peer/app:list" % self.reg.hostport, "--platform", "linux/amd64")
        self.assertEqual(self.read_marker(dest), "oci-child")

    def test_entry_of_the_wrong_kind_fails_only_when_chosen(self):
        # An entry typed as a manifest that holds an index is refused, but only where it is
        # the choice: without a platform it is passed over and the other entry serves.
        amd = images.push_image(self.client, "peer/app", None, [marker("amd")])
        arm = images.push_image(self.client, "peer/app", None, [marker("arm")],
                                architecture="arm64")
        inner = images.push_index(self.client, "peer/app", None, [(arm, ARM64)])
        images.push_index(self.client, "peer/app", "wrongkind", [
            {"mediaType": images.OCI_MANIFEST, "digest": inner["digest"],
             "size": inner["size"]},
            (amd, AMD64)])
        ref = "%s/peer/app:wrongkind" % self.reg.hostport
        cp, dest = self.pull(ref, "--platform", "linux/amd64")
        self.assertEqual(self.read_marker(dest), "amd")
        # arm64 is reachable only through the mistyped entry: no entry fits (exit 3, not 7).
        cp, _ = self.pull(ref, "--platform", "linux/arm64", check=3)
        self.assertIn("no entry of the index fits linux/arm64", cp.stderr)

    def test_attestation_by_digest_exit_8(self):
        # BuildKit's attestation manifest: an image config of unknown/unknown over in-toto
        # statements. By digest it was exit 3 (no platform fits); it is not an image.
        stmt = json.dumps({"_type": "https://in-toto.io/Statement/v0.1",
                           "predicateType": "https://spdx.dev/Document"}).encode()
        layer = {"blob": stmt, "media_type": "application/vnd.in-toto+json",
                 "diff_id": images.sha256_digest(stmt)}
        att = images.push_image(self.client, "peer/app", None, [layer], compression=None,
                                os="unknown", architecture="unknown")
        cp, dest = self.pull("%s/peer/app@%s" % (self.reg.hostport, att["digest"]), check=8)
        self.assertIn("not a container image", cp.stderr)
        self.assertIn("attestation", cp.stderr)
        self.assertFalse(os.path.exists(dest))
