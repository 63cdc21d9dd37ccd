"""Signature policy (issue 32): containers-policy.json and sigstore attachments made by
the project's own openssl fixture (tests/fixtures/sigstore.py), against the real registry.
Each attack is refused with exit 9 and its own message, and a refused pull leaves no blob,
no tag record and no rootfs behind."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import cases
import fpull
import images
import sigstore

REPO = "test/tiny"
LAYER = [{"path": "hello", "data": "hi\n"}]


class SignatureCase(cases.RegistryCase):
    tools = ("openssl",)

    @classmethod
    def setUpClass(cls):
        cls.keydir = tempfile.mkdtemp(prefix="fpull-sigkeys-")
        cls.keys = {}
        for name, kind in (("k1", "p256"), ("k2", "p256")):
            cls.keys[name] = sigstore.make_key(cls.keydir, name, kind)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.keydir, True)

    def setUp(self):
        super().setUp()
        self.R = self.reg.hostport
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"FPULL_CACHE": self.cache}
        self.img = images.push_image(self.client, REPO, "v1", [LAYER])
        self.digest = self.img["digest"]

    def key(self, name, kind="p256"):
        if name not in self.keys:
            self.keys[name] = sigstore.make_key(self.keydir, name, kind)
        return self.keys[name]

    def policy(self, scopes, default=None, name="policy.json"):
        return sigstore.policy(os.path.join(self.tmp, name), scopes, default)

    def repo_policy(self, pub, identity=None, repo=REPO):
        return self.policy({"%s/%s" % (self.R, repo): [sigstore.key_req(pub, identity)]})

    def pull(self, ref, policy, *extra, check=None, dest="out"):
        args = ["pull", "--policy", policy] + list(extra) + [
            ref if ref.startswith(self.R) else "%s/%s" % (self.R, ref), os.path.join(self.tmp, dest)]
        return fpull.run(args, env=self.env, check=check)

    def assert_nothing_left(self, dest="out"):
        self.assertFalse(os.path.lexists(os.path.join(self.tmp, dest)), "a rootfs was left")
        for sub in ("blobs", "tags"):
            left = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(self.cache, sub))
                    for f in fs]
            self.assertEqual(left, [], "%s left in the cache" % sub)

    def assert_rejected(self, cp, *words):
        self.assertEqual(cp.returncode, 9, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("signature policy", line)
        for w in words:
            self.assertIn(w, line)
        self.assert_nothing_left()
        return line


class TestAccept(SignatureCase):
    def test_signed_image_is_verified_and_reported(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        cp, doc = fpull.run_json(["pull", "--policy", self.repo_policy(pub),
                                  "%s/%s:v1" % (self.R, REPO), os.path.join(self.tmp, "out")],
                                 env=self.env)
        sig = doc["signature"]
        self.assertEqual(sig["state"], "verified")
        self.assertEqual(sig["requirement"], "sigstoreSigned")
        self.assertIn('"%s/%s"' % (self.R, REPO), sig["scope"])
        self.assertEqual(sig["identity"], "%s/%s:v1" % (self.R, REPO))
        self.assertEqual(sig["digest"], self.digest)
        self.assertTrue(sig["key_fingerprint"].startswith("sha256:"))
        self.assertEqual(open(os.path.join(self.tmp, "out", "hello")).read(), "hi\n")

    def test_every_key_type(self):
        for kind in ("p384", "p521", "rsa", "ed25519"):
            with self.subTest(kind=kind):
                priv, pub = self.key("t-" + kind, kind)
                sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
                cp = self.pull(REPO + ":v1", self.repo_policy(pub), "--force", check=0)
                self.assertIn("signature verified", cp.stderr)

    def test_key_data_and_key_paths(self):
        priv, pub = self.key("k1")
        _, other = self.key("k2")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        data = base64.b64encode(open(pub, "rb").read()).decode()
        scope = "%s/%s" % (self.R, REPO)
        pol = self.policy({scope: [{"type": "sigstoreSigned", "keyDatas": [
            base64.b64encode(open(other, "rb").read()).decode(), data]}]})
        self.pull(REPO + ":v1", pol, check=0)
        pol = self.policy({scope: [{"type": "sigstoreSigned", "keyPaths": [other, pub]}]})
        self.pull(REPO + ":v1", pol, "--force", check=0)

    def test_digest_pull_needs_the_repository_only(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        self.pull("%s/%s@%s" % (self.R, REPO, self.digest), self.repo_policy(pub), check=0)

    def test_match_repository_accepts_another_tag(self):
        priv, pub = self.key("k1")
        self.client.put_manifest(REPO, "v2", self.img["manifest"], images.OCI_MANIFEST)
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        pol = self.repo_policy(pub, {"type": "matchRepository"})
        self.pull(REPO + ":v2", pol, check=0)

    def test_exact_reference_and_remap_identity(self):
        priv, pub = self.key("k1")
        self.client.put_manifest(REPO, "v2", self.img["manifest"], images.OCI_MANIFEST)
        sigstore.sign(self.client, REPO, self.digest, priv, "signed.example/test/tiny:v2")
        pol = self.repo_policy(pub, {"type": "exactReference",
                                     "dockerReference": "signed.example/test/tiny:v2"})
        self.pull(REPO + ":v1", pol, check=0)
        pol = self.repo_policy(pub, {"type": "remapIdentity", "prefix": self.R,
                                     "signedPrefix": "signed.example"})
        self.pull(REPO + ":v2", pol, "--force", check=0)
        cp = self.pull(REPO + ":v1", pol, "--force")
        self.assertEqual(cp.returncode, 9, cp.stderr)
        pol = self.repo_policy(pub, {"type": "exactRepository",
                                     "dockerRepository": "signed.example/test/tiny"})
        self.pull(REPO + ":v1", pol, "--force", check=0)

    def test_most_specific_scope_wins(self):
        _, pub2 = self.key("k2")
        self.client.put_manifest(REPO, "v2", self.img["manifest"], images.OCI_MANIFEST)
        scope = "%s/%s" % (self.R, REPO)
        pol = self.policy({scope + ":v1": [sigstore.key_req(pub2)],
                           scope: [{"type": "insecureAcceptAnything"}]})
        self.assert_rejected(self.pull(REPO + ":v1", pol), scope + ':v1"')
        cp, doc = fpull.run_json(["pull", "--policy", pol, "%s:v2" % scope,
                                  os.path.join(self.tmp, "out")], env=self.env)
        self.assertEqual(doc["signature"]["state"], "accepted")
        self.assertEqual(doc["signature"]["requirement"], "insecureAcceptAnything")
        self.assertIn('"%s"' % scope, doc["signature"]["scope"])

    def test_namespace_and_wildcard_scopes(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        pol = self.policy({self.R + "/test": [sigstore.key_req(pub)]})
        self.pull(REPO + ":v1", pol, check=0)
        _, pub2 = self.key("k2")
        pol = self.policy({"*.0.1": [sigstore.key_req(pub2)]})
        self.assertEqual(self.pull(REPO + ":v1", pol, "--force").returncode, 9)

    def test_no_policy_behaves_as_before_unless_required(self):
        env = dict(self.env, XDG_CONFIG_HOME=os.path.join(self.tmp, "xdg"))
        ref = "%s/%s:v1" % (self.R, REPO)
        # The system's /etc/containers/policy.json (Debian ships one) is hidden by an empty
        # tmpfs in a mount namespace of the test's own.
        hide = ["unshare", "-m", "sh", "-c",
                'mount -t tmpfs none /etc/containers 2>/dev/null || '
                '{ [ ! -e /etc/containers/policy.json ] || exit 77; }; exec "$@"', "sh"]
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("hiding /etc/containers/policy.json needs root and unshare")

        def run(*args):
            return subprocess.run(hide + [fpull.binary()] + list(args), env=fpull.base_env(env),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cp = run("pull", ref, os.path.join(self.tmp, "a"))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertNotIn("signature", cp.stderr)
        cp = run("pull", "--require-signatures", ref, os.path.join(self.tmp, "b"))
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn("no policy was found", fpull.error_line(cp.stderr))
        # A user policy in ~/.config/containers is found as containers/image finds it.
        os.makedirs(os.path.join(self.tmp, "xdg", "containers"))
        sigstore.policy(os.path.join(self.tmp, "xdg", "containers", "policy.json"), {})
        cp = fpull.run(["pull", ref, os.path.join(self.tmp, "c")], env=env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn('requirement "reject"', fpull.error_line(cp.stderr))

    def test_config_keys(self):
        cfg = os.path.join(self.tmp, "config.yaml")
        pol = self.policy({}, name="site.json")
        with open(cfg, "w") as f:
            f.write("policy: %s\nrequire-signatures: true\n" % pol)
        cp = fpull.run(["pull", "--config", cfg, "%s/%s:v1" % (self.R, REPO),
                        os.path.join(self.tmp, "out")], env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn("site.json", fpull.error_line(cp.stderr))


class TestAttacks(SignatureCase):
    def test_wrong_key(self):
        priv, _ = self.key("k1")
        _, pub2 = self.key("k2")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub2)),
                             "does not verify with the policy's key")

    def test_json_error_object(self):
        _, pub = self.key("k1")
        cp = fpull.run(["pull", "--json", "--policy", self.repo_policy(pub),
                        "%s/%s:v1" % (self.R, REPO), os.path.join(self.tmp, "out")],
                       env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        doc = json.loads(cp.stdout)
        self.assertEqual(doc["error"]["code"], 9)
        self.assertIn("no signature exists", doc["error"]["message"])
        self.assert_nothing_left()

    def test_unsigned(self):
        _, pub = self.key("k1")
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "no signature exists for " + self.digest)

    def test_signature_replayed_onto_another_digest(self):
        priv, pub = self.key("k1")
        other = images.push_image(self.client, REPO, "v9", [[{"path": "x", "data": "evil"}]])
        p = sigstore.payload("%s/%s:v9" % (self.R, REPO), self.digest)
        sigstore.attach(self.client, REPO, other["digest"], [sigstore.signature_layer(priv, p)])
        self.assert_rejected(self.pull(REPO + ":v9", self.repo_policy(pub)),
                             "replayed", self.digest)

    def test_payload_edited(self):
        priv, pub = self.key("k1")
        good = sigstore.payload("%s/%s:v1" % (self.R, REPO), self.digest)
        _, ann = sigstore.signature_layer(priv, good)
        bad = good.replace(b":v1", b":v9")
        sigstore.attach(self.client, REPO, self.digest, [(bad, ann)])
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "does not verify")

    def test_identity_of_another_tag(self):
        priv, pub = self.key("k1")
        self.client.put_manifest(REPO, "v2", self.img["manifest"], images.OCI_MANIFEST)
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        self.assert_rejected(self.pull(REPO + ":v2", self.repo_policy(pub)),
                             "signed identity %s/%s:v1 is not accepted" % (self.R, REPO))

    def test_identity_of_another_repository(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/test/other:v1" % self.R)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "test/other:v1 is not accepted")

    def test_cosign_repository_only_identity_needs_match_repository(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s" % (self.R, REPO))
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)), "not accepted")
        self.pull(REPO + ":v1", self.repo_policy(pub, {"type": "matchRepository"}), check=0)

    def test_duplicate_payload_key(self):
        priv, pub = self.key("k1")
        fmt = sigstore.PAYLOAD_FMT.replace('"type":', '"type":"x","type":')
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO), fmt)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             'duplicate JSON key "type"')

    def test_unknown_payload_key(self):
        priv, pub = self.key("k1")
        fmt = sigstore.PAYLOAD_FMT.replace('"critical":{', '"critical":{"extra":1,')
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO), fmt)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             'unknown key "extra" in critical')

    def test_wrong_payload_type_and_timestamp(self):
        priv, pub = self.key("k1")
        fmt = sigstore.PAYLOAD_FMT.replace("cosign container image", "atomic container")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO), fmt)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)), "critical.type")
        fmt = sigstore.PAYLOAD_FMT.replace('"creator"', '"timestamp":1.5,"creator"')
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO), fmt)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)), "timestamp")

    def test_missing_or_bad_signature_annotation(self):
        priv, pub = self.key("k1")
        p = sigstore.payload("%s/%s:v1" % (self.R, REPO), self.digest)
        sigstore.attach(self.client, REPO, self.digest, [(p, None)])
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "no dev.cosignproject.cosign/signature annotation")
        sigstore.attach(self.client, REPO, self.digest,
                        [(p, {sigstore.SIG_ANNOTATION: "not base64!"})])
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)), "not base64")

    def test_oversized_payload(self):
        priv, pub = self.key("k1")
        p = sigstore.payload("%s/%s:v1" % (self.R, REPO), self.digest)
        # The descriptor claims 5 MiB: refused before a byte of it is fetched.
        layer = sigstore.signature_layer(priv, p) + (sigstore.SIG_LAYER, 5 << 20)
        sigstore.attach(self.client, REPO, self.digest, [layer])
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "more than 4194304 (4 MiB)")

    def test_too_many_attachments(self):
        priv, pub = self.key("k1")
        p = sigstore.payload("%s/%s:v1" % (self.R, REPO), self.digest)
        sigstore.attach(self.client, REPO, self.digest, [sigstore.signature_layer(priv, p)] * 65)
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "65 attachments, more than 64")

    def test_signature_tag_not_a_manifest(self):
        _, pub = self.key("k1")
        images.push_index(self.client, REPO, sigstore.sig_tag(self.digest),
                          [(self.img, {"os": "linux", "architecture": "amd64"})])
        self.assert_rejected(self.pull(REPO + ":v1", self.repo_policy(pub)),
                             "not an OCI image manifest")

    def test_unsupported_requirement_in_scope(self):
        priv, pub = self.key("k1")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        scope = "%s/%s" % (self.R, REPO)
        for req, name in (({"type": "signedBy", "keyType": "GPGKeys", "keyPath": pub}, "signedBy"),
                          ({"type": "sigstoreSigned", "fulcio": {"caPath": pub,
                                                                  "oidcIssuer": "x",
                                                                  "subjectEmail": "y"},
                            "rekorPublicKeyPath": pub}, "sigstoreSigned with fulcio"),
                          (dict(sigstore.key_req(pub), rekorPublicKeyPath=pub),
                           "sigstoreSigned with rekorPublicKeyPath")):
            with self.subTest(name=name):
                pol = self.policy({scope: [sigstore.key_req(pub), req]})
                self.assert_rejected(self.pull(REPO + ":v1", pol),
                                     "requirement %s cannot be evaluated" % name)
        # Out of scope it does not matter.
        pol = self.policy({scope: [sigstore.key_req(pub)], "other.example/x": [
            {"type": "signedBy", "keyType": "GPGKeys", "keyPath": pub}]})
        self.pull(REPO + ":v1", pol, check=0)

    def test_reject_default(self):
        pol = self.policy({"other.example/x": [{"type": "insecureAcceptAnything"}]})
        self.assert_rejected(self.pull(REPO + ":v1", pol), "default", 'requirement "reject"')


def marker(text):
    return [{"path": "which", "data": text + "\n"}]


class TestIndex(SignatureCase):
    """An entry chosen from an index needs its own signature (containers/image's rule);
    --signature-index=either|both also accepts, or also requires, the index's."""

    def setUp(self):
        super().setUp()
        self.gpu = images.push_image(self.client, REPO, None, [marker("gpu")])
        self.plain = images.push_image(self.client, REPO, None, [marker("plain")])
        self.idx = images.push_index(self.client, REPO, "multi", [
            (self.gpu, {"os": "linux", "architecture": "amd64", "features": ["nvidia-396-44"]}),
            (self.plain, {"os": "linux", "architecture": "amd64"})])
        self.ident = "%s/%s:multi" % (self.R, REPO)
        self.priv, self.pub = self.key("k1")

    def pull_multi(self, *extra, platform="linux/amd64"):
        return self.pull(REPO + ":multi", self.repo_policy(self.pub), "--platform", platform,
                         *extra)

    def test_index_signed_but_not_the_entry(self):
        sigstore.sign(self.client, REPO, self.idx["digest"], self.priv, self.ident)
        self.assert_rejected(self.pull_multi(),
                             "no signature exists for " + self.plain["digest"],
                             "an entry of index %s needs its own signature" % self.idx["digest"])
        cp = self.pull_multi("--signature-index", "either")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(open(os.path.join(self.tmp, "out", "which")).read(), "plain\n")
        self.assertIn(self.idx["digest"], cp.stderr)

    def test_entry_signed(self):
        sigstore.sign(self.client, REPO, self.plain["digest"], self.priv, self.ident)
        cp = self.pull_multi()
        self.assertEqual(cp.returncode, 0, cp.stderr)
        shutil.rmtree(os.path.join(self.tmp, "out"))
        shutil.rmtree(self.cache)
        self.assert_rejected(self.pull_multi("--signature-index", "both"),
                             "the index's own signature", "no signature exists for " +
                             self.idx["digest"])
        sigstore.sign(self.client, REPO, self.idx["digest"], self.priv, self.ident)
        self.assertEqual(self.pull_multi("--signature-index", "both").returncode, 0)

    def test_unsigned_preferred_entry_is_an_error_not_a_fallback(self):
        # plain is signed, the GPU entry this target prefers is not: no silent fallback.
        sigstore.sign(self.client, REPO, self.plain["digest"], self.priv, self.ident)
        self.assert_rejected(self.pull_multi(platform="linux/amd64:nvidia-396-44"),
                             "no signature exists for " + self.gpu["digest"])

    def test_index_prefetched_then_pulled_offline(self):
        sigstore.sign(self.client, REPO, self.plain["digest"], self.priv, self.ident)
        ref = "%s/%s:multi" % (self.R, REPO)
        pol = self.repo_policy(self.pub)
        fpull.run(["prefetch", "--policy", pol, "--platform", "linux/amd64", ref],
                  env=self.env, check=0)
        self.reg.stop()
        cp, doc = fpull.run_json(["pull", "--offline", "--policy", pol, "--platform",
                                  "linux/amd64", ref, os.path.join(self.tmp, "out")],
                                 env=self.env)
        self.assertEqual(doc["signature"]["state"], "verified")
        self.assertEqual(doc["manifest_digest"], self.plain["digest"])

    def test_inspect_shows_each_entry_state(self):
        sigstore.sign(self.client, REPO, self.plain["digest"], self.priv, self.ident)
        cp, doc = fpull.run_json(["inspect", "--policy", self.repo_policy(self.pub),
                                  "--platform", "linux/amd64", "%s/%s:multi" % (self.R, REPO)],
                                 env=self.env)
        states = {e["digest"]: e["signature"] for e in doc["entries"]}
        self.assertEqual(states[self.plain["digest"]]["state"], "verified")
        self.assertEqual(states[self.plain["digest"]]["identity"], self.ident)
        self.assertEqual(states[self.gpu["digest"]]["state"], "rejected")
        self.assertIn("no signature exists", states[self.gpu["digest"]]["reason"])
        self.assertEqual(doc["index_signature"]["state"], "rejected")
        cp = fpull.run(["inspect", "--policy", self.repo_policy(self.pub), "--platform",
                        "linux/amd64", "%s/%s:multi" % (self.R, REPO)], env=self.env, check=0)
        self.assertIn("signature verified", cp.stdout)
        self.assertIn("signature rejected", cp.stdout)


class TestOffline(SignatureCase):
    """Signatures are cached with the manifest and checked again, against the policy in
    force, on every offline pull."""

    def test_prefetch_then_pull_offline_reverifies(self):
        priv, pub = self.key("k1")
        _, pub2 = self.key("k2")
        sigstore.sign(self.client, REPO, self.digest, priv, "%s/%s:v1" % (self.R, REPO))
        ref = "%s/%s:v1" % (self.R, REPO)
        fpull.run(["prefetch", "--policy", self.repo_policy(pub), ref], env=self.env, check=0)
        self.reg.stop()
        cp = self.pull(ref, self.repo_policy(pub), "--offline", check=0)
        self.assertIn("signature verified", cp.stderr)
        shutil.rmtree(os.path.join(self.tmp, "out"))
        other = self.policy({"%s/%s" % (self.R, REPO): [sigstore.key_req(pub2)]}, name="p2.json")
        cp = self.pull(ref, other, "--offline")
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn("does not verify", fpull.error_line(cp.stderr))
        self.assertFalse(os.path.lexists(os.path.join(self.tmp, "out")))

    def test_unsigned_cached_image_is_refused_offline(self):
        _, pub = self.key("k1")
        ref = "%s/%s:v1" % (self.R, REPO)
        fpull.run(["prefetch", ref], env=self.env, check=0)
        cp = self.pull(ref, self.repo_policy(pub), "--offline")
        self.assertEqual(cp.returncode, 9, cp.stderr)
        # Never fetched is not "none exists" (issue 43.8).
        self.assertIn("not in the cache; prefetch with the policy in force",
                      fpull.error_line(cp.stderr))


class TestSignKey(SignatureCase):
    """fpull manifest push --sign-key signs the index and each entry (the form of skopeo and
    cosign sign --recursive), so that the default policy accepts every entry."""

    def test_push_signs_index_and_entries(self):
        gpu = images.push_image(self.client, "src/gpu", "v1", [marker("gpu")])
        plain = images.push_image(self.client, "src/plain", "v1", [marker("plain")])
        spec = os.path.join(self.tmp, "spec.yaml")
        with open(spec, "w") as f:
            f.write("image: %s/test/multi:v1\nmanifests:\n"
                    "  - image: %s/src/gpu:v1\n    platform: {os: linux, architecture: amd64,"
                    " features: [nvidia-396-44]}\n"
                    "  - image: %s/src/plain:v1\n    platform: {os: linux, architecture: amd64}\n"
                    % (self.R, self.R, self.R))
        for kind in ("p256", "ed25519", "rsa"):
            with self.subTest(kind=kind):
                priv, pub = self.key("push-" + kind, kind)
                cp, doc = fpull.run_json(["manifest", "push", "--json", "--sign-key", priv, spec],
                                         env=self.env)
                pol = self.repo_policy(pub, repo="test/multi")
                ref = "%s/test/multi:v1" % self.R
                for plat, want in (("linux/amd64:nvidia-396-44", gpu), ("linux/amd64", plain)):
                    shutil.rmtree(os.path.join(self.tmp, "out"), True)
                    cp, got = fpull.run_json(["pull", "--policy", pol, "--platform", plat, ref,
                                              os.path.join(self.tmp, "out")], env=self.env)
                    self.assertEqual(got["signature"]["state"], "verified")
                    self.assertEqual(got["signature"]["identity"], ref)
                    self.assertEqual(got["manifest_digest"], doc["manifests"][
                        0 if want is gpu else 1]["digest"])
                shutil.rmtree(os.path.join(self.tmp, "out"), True)
                fpull.run(["pull", "--policy", pol, "--platform", "linux/amd64",
                           "--signature-index", "both", ref, os.path.join(self.tmp, "out")],
                          env=self.env, check=0)
                # prefetch --all: every entry is checked, and every one is signed.
                fpull.run(["prefetch", "--all", "--policy", pol, ref], env=self.env, check=0)

    def test_bad_key_is_a_usage_error_before_anything_is_pushed(self):
        _, pub = self.key("k1")
        spec = os.path.join(self.tmp, "spec.yaml")
        with open(spec, "w") as f:
            f.write("image: %s/test/multi:v1\nmanifests:\n  - image: %s/%s:v1\n"
                    "    platform: {os: linux, architecture: amd64}\n" % (self.R, self.R, REPO))
        cp = fpull.run(["manifest", "push", "--sign-key", pub, spec], env=self.env)
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("not an unencrypted PEM private key", fpull.error_line(cp.stderr))
        status, _, _ = self.client.get("/v2/test/multi/manifests/v1")
        self.assertEqual(status, 404)


class TestPolicyFile(SignatureCase):
    def test_invalid_policies_are_usage_errors(self):
        _, pub = self.key("k1")
        scope = "%s/%s" % (self.R, REPO)
        bad = {
            "no default": '{"transports":{}}',
            "unknown key": '{"default":[{"type":"reject"}],"extra":1}',
            "duplicate": '{"default":[{"type":"reject"}],"default":[{"type":"reject"}]}',
            "unknown type": '{"default":[{"type":"acceptIfFriday"}]}',
            "empty list": '{"default":[]}',
            "two key sources": json.dumps({"default": [{"type": "sigstoreSigned",
                                                         "keyPath": pub, "keyData": "eA=="}]}),
            "bad identity": json.dumps({"default": [dict(sigstore.key_req(pub),
                                        signedIdentity={"type": "matchAnything"})]}),
            "scope not a list": json.dumps({"default": [{"type": "reject"}],
                                            "transports": {"docker": {scope: {
                                                "type": "reject"}}}}),
        }
        for what, text in bad.items():
            with self.subTest(what=what):
                path = os.path.join(self.tmp, "bad.json")
                with open(path, "w") as f:
                    f.write(text)
                cp = self.pull(REPO + ":v1", path)
                self.assertEqual(cp.returncode, 2, cp.stderr)
                self.assertIn("policy %s" % path, fpull.error_line(cp.stderr))
        cp = self.pull(REPO + ":v1", os.path.join(self.tmp, "missing.json"))
        self.assertEqual(cp.returncode, 2, cp.stderr)

    def test_what_skopeo_loads_fpull_loads(self):
        # skopeo 1.18 loads odd docker scopes and relative key paths; so does fpull, and a
        # relative key in the list that applies refuses the image (exit 9), never exit 2.
        scope = "%s/%s" % (self.R, REPO)
        pol = self.policy({"Odd Scope/": [{"type": "reject"}],
                           scope: [{"type": "sigstoreSigned", "keyPath": "k.pub"}]})
        self.assert_rejected(self.pull(REPO + ":v1", pol), "key file k.pub is not an absolute")
        pol = self.policy({"Odd Scope/": [{"type": "sigstoreSigned", "keyPath": "k.pub"}],
                           scope: [{"type": "insecureAcceptAnything"}]})
        self.pull(REPO + ":v1", pol, check=0)

    def test_bad_signature_index_value(self):
        cp = fpull.run(["pull", "--signature-index", "eihter", "x/y"], env=self.env)
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("did you mean 'either'", cp.stderr)


if __name__ == "__main__":
    unittest.main()
