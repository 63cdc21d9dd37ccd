"""fpull's signature verdicts against skopeo 1.18's (containers/image 5.34, the policy
oracle) and images signed by cosign 2.5 and skopeo 1.18 themselves (issue 32, "Done when").

Neither tool is in Debian 12 with sigstore enabled: scripts/sig-oracle-tools downloads the
trixie packages from the Debian mirror apt already uses and unpacks them into the build
directory (signatures.md, 8.1). When that is impossible, the tests skip and say why."""
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
TOOLS = os.path.join(os.environ.get("FPULL_BUILD_DIR", tempfile.gettempdir()), "sig-oracle")
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "sig-oracle-tools")
_tools_error = None


def tools():
    """(skopeo18, cosign) paths, or skips with the reason they cannot be had."""
    global _tools_error
    if _tools_error is None:
        cp = subprocess.run([SCRIPT, TOOLS], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=600)
        _tools_error = "" if cp.returncode == 0 else (cp.stderr.strip() or "exit %d" %
                                                       cp.returncode)
    if _tools_error:
        raise unittest.SkipTest("skopeo 1.18 / cosign 2.5 from Debian trixie cannot be had "
                                "here (%s): the oracle cross-check did not run" % _tools_error)
    return os.path.join(TOOLS, "skopeo18"), os.path.join(TOOLS, "root", "usr", "bin", "cosign")


class OracleCase(cases.RegistryCase):
    tools = ("openssl",)

    def setUp(self):
        super().setUp()
        self.skopeo, self.cosign = tools()
        self.R = self.reg.hostport
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}
        self.regd = os.path.join(self.tmp, "regd")
        os.makedirs(self.regd)
        with open(os.path.join(self.regd, "default.yaml"), "w") as f:
            f.write("default-docker:\n  use-sigstore-attachments: true\n")
        self.img = images.push_image(self.client, REPO, "v1", [[{"path": "x", "data": "x\n"}]])
        self.digest = self.img["digest"]
        self.k1, self.p1 = sigstore.make_key(self.tmp, "k1")
        self.n = 0

    def policy(self, scopes):
        self.n += 1
        return sigstore.policy(os.path.join(self.tmp, "pol%d.json" % self.n), scopes)

    def req(self, pub=None, identity=None, repo=REPO):
        return {"%s/%s" % (self.R, repo): [sigstore.key_req(pub or self.p1, identity)]}

    def fpull_verdict(self, pol, ref, *extra):
        self.n += 1
        cp = fpull.run(["pull", "--policy", pol] + list(extra) +
                       [ref, os.path.join(self.tmp, "out%d" % self.n)], env=self.env)
        self.assertIn(cp.returncode, (0, 9), cp.stderr)
        return cp.returncode == 0, cp.stderr

    def skopeo_verdict(self, pol, ref, *extra):
        self.n += 1
        cp = subprocess.run([self.skopeo, "--policy", pol, "--registries.d", self.regd] +
                            list(extra) + ["copy", "-q", "--remove-signatures",
                                           "--src-tls-verify=false", "docker://" + ref,
                                           "oci:%s/oci%d:x" % (self.tmp, self.n)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=120)
        return cp.returncode == 0, cp.stderr

    def agree(self, pol, ref, want, fpull_extra=(), skopeo_extra=()):
        got, ferr = self.fpull_verdict(pol, ref, *fpull_extra)
        oracle, serr = self.skopeo_verdict(pol, ref, *skopeo_extra)
        self.assertEqual(oracle, want, "skopeo 1.18: %s" % serr)
        self.assertEqual(got, oracle, "fpull %s, skopeo 1.18 %s\nfpull: %s\nskopeo: %s" % (
            got, oracle, ferr, serr))

    def ref(self, tag="v1", repo=REPO):
        return "%s/%s%s%s" % (self.R, repo, "@" if tag.startswith("sha256:") else ":", tag)


class TestSameVerdicts(OracleCase):
    def test_keys_and_identities(self):
        ident = self.ref()
        sigstore.sign(self.client, REPO, self.digest, self.k1, ident)
        self.client.put_manifest(REPO, "v2", self.img["manifest"], images.OCI_MANIFEST)
        _, p2 = sigstore.make_key(self.tmp, "k2")
        cases_ = [
            ("A signed", self.req(), self.ref(), True),
            ("B other key", self.req(p2), self.ref(), False),
            ("C other tag", self.req(), self.ref("v2"), False),
            ("D matchRepository", self.req(identity={"type": "matchRepository"}),
             self.ref("v2"), True),
            ("E by digest", self.req(), self.ref(self.digest), True),
            ("M exactReference", self.req(identity={"type": "exactReference",
                                                   "dockerReference": ident}),
             self.ref("v2"), True),
            ("N exactRepository", self.req(identity={"type": "exactRepository",
                                                    "dockerRepository": self.R + "/x/y"}),
             self.ref(), False),
            ("remapIdentity", self.req(identity={"type": "remapIdentity", "prefix": self.R,
                                                 "signedPrefix": self.R}), self.ref(), True),
            ("L other scope", {"%s/other" % self.R: [{"type": "insecureAcceptAnything"}]},
             self.ref(), False),
            ("namespace scope", {"%s/test" % self.R: [sigstore.key_req(self.p1)]},
             self.ref(), True),
            ("O tag scope wins", {self.ref(): [sigstore.key_req(p2)], "%s/%s" % (self.R, REPO):
                                  [{"type": "insecureAcceptAnything"}]}, self.ref(), False),
            ("P repo scope", {self.ref(): [sigstore.key_req(p2)], "%s/%s" % (self.R, REPO):
                              [{"type": "insecureAcceptAnything"}]}, self.ref("v2"), True),
            ("reject and accept", {"%s/%s" % (self.R, REPO): [
                sigstore.key_req(self.p1), {"type": "reject"}]}, self.ref(), False),
        ]
        for name, scopes, ref, want in cases_:
            with self.subTest(case=name):
                self.agree(self.policy(scopes), ref, want)

    def test_attacks(self):
        ident = self.ref()
        other = images.push_image(self.client, REPO, "v9", [[{"path": "y", "data": "y\n"}]])
        unsigned = images.push_image(self.client, REPO, "v3", [[{"path": "z", "data": "z\n"}]])
        good = sigstore.payload(ident, self.digest)
        sigstore.attach(self.client, REPO, other["digest"],
                        [sigstore.signature_layer(self.k1, good)])
        pol = self.policy(self.req())
        with self.subTest(case="F unsigned"):
            self.agree(pol, self.ref("v3"), False)
        with self.subTest(case="G replay"):
            self.agree(self.policy(self.req(identity={"type": "matchRepository"})),
                       self.ref("v9"), False)
        variants = [
            ("H edited", lambda: sigstore.attach(self.client, REPO, self.digest, [
                (good.replace(b":v1", b":v8"), sigstore.signature_layer(self.k1, good)[1])])),
            ("W duplicate key", lambda: sigstore.sign(
                self.client, REPO, self.digest, self.k1, ident,
                sigstore.PAYLOAD_FMT.replace('"type":', '"type":"x","type":'))),
            ("X unknown key", lambda: sigstore.sign(
                self.client, REPO, self.digest, self.k1, ident,
                sigstore.PAYLOAD_FMT.replace('"critical":{', '"critical":{"extra":1,'))),
            ("atomic type", lambda: sigstore.sign(
                self.client, REPO, self.digest, self.k1, ident,
                sigstore.PAYLOAD_FMT.replace("cosign container image", "atomic container"))),
            ("timestamp 1.5", lambda: sigstore.sign(
                self.client, REPO, self.digest, self.k1, ident,
                sigstore.PAYLOAD_FMT.replace('"creator"', '"timestamp":1.5,"creator"'))),
            ("no annotation", lambda: sigstore.attach(self.client, REPO, self.digest,
                                                      [(good, None)])),
            ("index at the .sig tag", lambda: images.push_index(
                self.client, REPO, sigstore.sig_tag(self.digest),
                [(unsigned, {"os": "linux", "architecture": "amd64"})])),
        ]
        for name, make in variants:
            with self.subTest(case=name):
                make()
                self.agree(pol, self.ref(), False)
        with self.subTest(case="valid again"):
            sigstore.sign(self.client, REPO, self.digest, self.k1, ident)
            self.agree(pol, self.ref(), True)

    def test_key_types(self):
        for kind in ("p384", "p521", "rsa", "ed25519"):
            with self.subTest(kind=kind):
                priv, pub = sigstore.make_key(self.tmp, "t-" + kind, kind)
                sigstore.sign(self.client, REPO, self.digest, priv, self.ref())
                self.agree(self.policy(self.req(pub)), self.ref(), True)


class TestForeignSigners(OracleCase):
    def cosign_env(self):
        home = os.path.join(self.tmp, "home")
        os.makedirs(home, exist_ok=True)
        return dict(os.environ, HOME=home, COSIGN_PASSWORD="test-pass",
                    COSIGN_EXPERIMENTAL="0", NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")

    def cosign_run(self, *args):
        cp = subprocess.run([self.cosign] + list(args), cwd=self.tmp, env=self.cosign_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=180)
        self.assertEqual(cp.returncode, 0, "cosign %s: %s" % (" ".join(args), cp.stderr))
        return cp

    def test_cosign_signed_image_verifies(self):
        self.cosign_run("generate-key-pair")
        pub = os.path.join(self.tmp, "cosign.pub")
        self.cosign_run("sign", "-y", "--key", "cosign.key", "--tlog-upload=false",
                        "--allow-http-registry", self.ref(self.digest))
        # cosign signs the repository only: the default identity rule refuses it on a tag
        # pull (skopeo too), matchRepository accepts it.
        self.agree(self.policy(self.req(pub)), self.ref(), False)
        self.agree(self.policy(self.req(pub, {"type": "matchRepository"})), self.ref(), True)

    def test_cosign_index_recursive(self):
        self.cosign_run("generate-key-pair")
        pub = os.path.join(self.tmp, "cosign.pub")
        arm = images.push_image(self.client, REPO, None, [[{"path": "a", "data": "a"}]],
                                architecture="arm64")
        idx = images.push_index(self.client, REPO, "multi", [
            (self.img, {"os": "linux", "architecture": "amd64"}),
            (arm, {"os": "linux", "architecture": "arm64"})])
        pol = self.policy(self.req(pub, {"type": "matchRepository"}))
        plat = (["--platform", "linux/amd64"], ["--override-arch", "amd64", "--override-os",
                                                 "linux"])
        self.cosign_run("sign", "-y", "--key", "cosign.key", "--tlog-upload=false",
                        "--allow-http-registry", self.ref(idx["digest"]))
        self.agree(pol, self.ref("multi"), False, *plat)  # Q: the entry is not signed
        got, _ = self.fpull_verdict(pol, self.ref("multi"), "--platform", "linux/amd64",
                                    "--signature-index", "either")
        self.assertTrue(got, "--signature-index=either accepts the index's signature")
        self.cosign_run("sign", "-y", "--recursive", "--key", "cosign.key",
                        "--tlog-upload=false", "--allow-http-registry", self.ref(idx["digest"]))
        self.agree(pol, self.ref("multi"), True, *plat)  # S

    def test_skopeo_signed_image_verifies(self):
        pw = os.path.join(self.tmp, "pass.txt")
        with open(pw, "w") as f:
            f.write("test-pass")
        subprocess.run([self.skopeo, "generate-sigstore-key", "--output-prefix",
                        os.path.join(self.tmp, "sk"), "--passphrase-file", pw], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        open_pol = self.policy({})
        with open(open_pol, "w") as f:
            f.write('{"default":[{"type":"insecureAcceptAnything"}]}')
        subprocess.run([self.skopeo, "--policy", open_pol, "--registries.d", self.regd, "copy",
                        "-q", "--src-tls-verify=false", "--dest-tls-verify=false",
                        "--sign-by-sigstore-private-key", os.path.join(self.tmp, "sk.private"),
                        "--sign-passphrase-file", pw, "docker://" + self.ref(),
                        "docker://" + self.ref("v1", "test/skop")], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        pub = os.path.join(self.tmp, "sk.pub")
        self.agree(self.policy(self.req(pub, repo="test/skop")), self.ref("v1", "test/skop"),
                   True)
        self.agree(self.policy(self.req(self.p1, repo="test/skop")),
                   self.ref("v1", "test/skop"), False)


if __name__ == "__main__":
    unittest.main()
