"""The first hour, round 2 (issue 43, items 5-8 and 10): what users coming from skopeo,
crane and cosign tripped over in fpull's outputs, signatures and option set, each through
the CLI as a user types it, against the real registry."""
import json
import os
import shutil
import subprocess
import tempfile

import cases
import fpull
import images
import pki
import registry
import sigstore

REPO = "test/tiny"
LAYER = [{"path": "hello", "data": "hi\n"}]
ACCEPT_ALL = {"default": [{"type": "insecureAcceptAnything"}]}


class FirstHourCase(cases.RegistryCase):
    tools = ("openssl",)

    def setUp(self):
        super().setUp()
        self.R = self.reg.hostport
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"FPULL_CACHE": self.cache,
                    "XDG_CONFIG_HOME": os.path.join(self.tmp, "xdg")}
        self.img = images.push_image(self.client, REPO, "v1", [LAYER])
        self.digest = self.img["digest"]
        self.ref = "%s/%s:v1" % (self.R, REPO)

    def write_json(self, name, doc):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path


class TestRequireSignatures(FirstHourCase):
    """Item 7: --require-signatures wants a rule that checks a signature; a policy that
    accepts anything (Debian's stock /etc/containers/policy.json) does not satisfy it."""

    def test_accept_anything_policy_does_not_satisfy_it(self):
        pol = self.write_json("accept.json", ACCEPT_ALL)
        dest = os.path.join(self.tmp, "out")
        cp = fpull.run(["pull", "--policy", pol, "--require-signatures", self.ref, dest],
                       env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn(pol, line)
        self.assertIn("insecureAcceptAnything", line)
        self.assertIn("--require-signatures", line)
        self.assertFalse(os.path.lexists(dest))
        # Nothing of the refused image is kept in the cache either.
        left = [f for _, _, fs in os.walk(os.path.join(self.cache, "tags")) for f in fs]
        self.assertEqual(left, [])
        # Without the option the same policy still accepts (as before).
        cp = fpull.run(["pull", "--policy", pol, self.ref, dest], env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)

    def test_a_found_accept_anything_policy_does_not_count(self):
        # The policy found without --policy (here the user's; the system's is the same rule).
        os.makedirs(os.path.join(self.tmp, "xdg", "containers"))
        pol = os.path.join(self.tmp, "xdg", "containers", "policy.json")
        with open(pol, "w") as f:
            json.dump(ACCEPT_ALL, f)
        cp = fpull.run(["pull", "--require-signatures", self.ref, os.path.join(self.tmp, "o")],
                       env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn(pol, fpull.error_line(cp.stderr))
        # The config's require-signatures: is the same promise.
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write("require-signatures: true\n")
        cp = fpull.run(["pull", "--config", cfg, self.ref, os.path.join(self.tmp, "o")],
                       env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)

    def test_accept_anything_scope_next_to_a_signed_one(self):
        keydir = tempfile.mkdtemp(prefix="fpull-sigkeys-")
        self.addCleanup(shutil.rmtree, keydir, True)
        priv, pub = sigstore.make_key(keydir, "k1")
        sigstore.sign(self.client, REPO, self.digest, priv, self.ref)
        images.push_image(self.client, "test/other", "v1", [LAYER])
        pol = sigstore.policy(os.path.join(self.tmp, "p.json"),
                              {"%s/%s" % (self.R, REPO): [sigstore.key_req(pub)]},
                              default=[{"type": "insecureAcceptAnything"}])
        cp = fpull.run(["pull", "--policy", pol, "--require-signatures", self.ref,
                        os.path.join(self.tmp, "a")], env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("signature verified", cp.stderr)
        cp = fpull.run(["pull", "--policy", pol, "--require-signatures",
                        "%s/test/other:v1" % self.R, os.path.join(self.tmp, "b")], env=self.env)
        self.assertEqual(cp.returncode, 9, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn(pol, line)
        self.assertIn("default", line)
        self.assertIn("insecureAcceptAnything", line)

    def test_inspect_says_no_signature_required(self):
        pol = self.write_json("accept.json", ACCEPT_ALL)
        arm = images.push_image(self.client, REPO, None, [LAYER], architecture="arm64")
        images.push_index(self.client, REPO, "multi", [
            (self.img, {"os": "linux", "architecture": "amd64"}),
            (arm, {"os": "linux", "architecture": "arm64"})])
        cp = fpull.run(["inspect", "--policy", pol, "%s/%s:multi" % (self.R, REPO)],
                       env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertNotIn("signature accepted", cp.stdout)
        self.assertIn("no signature required", cp.stdout)
        cp = fpull.run(["inspect", "--policy", pol, "--require-signatures",
                        "%s/%s:multi" % (self.R, REPO)], env=self.env)
        self.assertIn("signature rejected", cp.stdout)
        self.assertNotIn("no signature required", cp.stdout)


class TestCertDirAndCreds(cases.RegistryCase):
    """Item 10: login and manifest take --cert-dir as pull does, and manifest push takes
    --creds USER:PASS, against a registry with a private CA and htpasswd."""
    tools = ("openssl", "htpasswd")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-certdir-")
        self.addCleanup(fpull.rmtree, self.tmp)
        cases.require_tools(self, *self.tools)
        ca = pki.CA(os.path.join(self.tmp, "pki"))
        # A name that is not literally loopback: loopback registries are insecure ones.
        cert, key = ca.issue("registry", ips=["127.0.0.1"], dns=["registry.fpull.test"])
        pw = os.path.join(self.tmp, "htpasswd")
        out = subprocess.run(["htpasswd", "-Bbn", "bob", "b0b-Secret"], check=True,
                             capture_output=True, text=True).stdout
        with open(pw, "w") as f:
            f.write(out)
        self.reg = registry.Registry(tls=(cert, key),
                                     auth={"htpasswd": {"realm": "t", "path": pw}}).start()
        self.addCleanup(self.reg.stop)
        self.R = "registry.fpull.test:%d" % self.reg.port
        c = images.Client(self.reg.url, username="bob", password="b0b-Secret", cafile=ca.cert)
        self.img = images.push_image(c, "b/img", "v1", [LAYER])
        self.own = os.path.join(self.tmp, "own")
        os.mkdir(self.own)
        shutil.copy(ca.cert, os.path.join(self.own, "ca.crt"))
        self.env = {"DOCKER_CONFIG": os.path.join(self.tmp, "docker"),
                    "REGISTRY_AUTH_FILE": os.path.join(self.tmp, "auth.json"),
                    "XDG_RUNTIME_DIR": os.path.join(self.tmp, "run"),
                    "FPULL_CACHE": os.path.join(self.tmp, "cache"),
                    "SSL_CERT_FILE": None, "SSL_CERT_DIR": None,
                    "FPULL_RESOLVE": "registry.fpull.test:%d:127.0.0.1" % self.reg.port}

    def test_login_takes_cert_dir(self):
        cp = fpull.run(["login", "-u", "bob", "--password-stdin", "--cert-dir", self.own,
                        self.R], env=self.env, input="b0b-Secret\n")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("Login Succeeded", cp.stderr)
        # Without it the private CA is not trusted, as before.
        cp = fpull.run(["login", "-u", "bob", "--password-stdin", self.R], env=self.env,
                       input="b0b-Secret\n")
        self.assertEqual(cp.returncode, 6, cp.stderr)
        self.assertIn("not trusted", fpull.error_line(cp.stderr))

    def test_manifest_push_takes_creds_and_cert_dir(self):
        spec = os.path.join(self.tmp, "spec.yaml")
        target = "%s/b/idx:v1" % self.R
        with open(spec, "w") as f:
            f.write("image: %s\ntags: [v1.0]\nmanifests:\n  - image: %s/b/img:v1\n"
                    "    platform: {os: linux, architecture: amd64}\n" % (target, self.R))
        keydir = os.path.join(self.tmp, "keys")
        os.mkdir(keydir)
        priv, pub = sigstore.make_key(keydir, "k1")
        cp = fpull.run(["manifest", "push", "--cert-dir", self.own, spec], env=self.env)
        self.assertEqual(cp.returncode, 4, cp.stderr)  # no credentials anywhere
        cp = fpull.run(["manifest", "push", "--cert-dir", self.own, "--creds", "bob:b0b-Secret",
                        "--sign-key", priv, spec], env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        digest = cp.stdout.strip()
        self.assertTrue(digest.startswith("sha256:"), cp.stdout)
        cp = fpull.run(["manifest", "inspect", "--cert-dir", self.own, "--creds",
                        "bob:b0b-Secret", target], env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(images.sha256_digest(cp.stdout.encode()), digest)
        # The signatures went to the same registry with the same credentials.
        pol = sigstore.policy(os.path.join(self.tmp, "p.json"),
                              {self.R: [sigstore.key_req(pub)]})
        cp = fpull.run(["pull", "--policy", pol, "--cert-dir", self.own, "--creds",
                        "bob:b0b-Secret", target, os.path.join(self.tmp, "out")], env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("signature verified", cp.stderr)


class TestLayoutAddsTags(cases.RegistryCase):
    """Item 5: oci:DIR:TAG into an existing layout adds the tag, as skopeo does; a tag it
    has is replaced only with --force, and --force never drops the layout's other tags."""
    tools = ("skopeo", "umoci")

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.a = images.push_image(self.client, "lay/a", "v1",
                                   [[{"path": "etc/hello", "data": "a\n"}]])
        self.b = images.push_image(self.client, "lay/b", "v1",
                                   [[{"path": "etc/hello", "data": "b\n"}]])
        self.lay = os.path.join(self.tmp, "lay")

    def pull(self, repo, tag=None, *extra):
        dest = "oci:" + self.lay + (":" + tag if tag else "")
        return fpull.run(["pull", "-q", "--platform", "linux/amd64", "--cache-dir", self.cache] +
                         list(extra) + ["%s/%s:v1" % (self.reg.hostport, repo), dest])

    def digest(self, tag):
        cp = subprocess.run(["skopeo", "inspect", "oci:%s:%s" % (self.lay, tag)],
                            capture_output=True, text=True, check=True)
        return json.loads(cp.stdout)["Digest"]

    def umoci_tags(self):
        cp = subprocess.run(["umoci", "ls", "--layout", self.lay], capture_output=True,
                            text=True, check=True)
        return sorted(cp.stdout.split())

    def umoci_hello(self, tag):
        out = os.path.join(self.tmp, "unpacked-" + tag)
        shutil.rmtree(out, True)
        subprocess.run(["umoci", "unpack", "--image", "%s:%s" % (self.lay, tag), out],
                       check=True, capture_output=True)
        with open(os.path.join(out, "rootfs", "etc", "hello")) as f:
            return f.read()

    def test_second_tag_is_added(self):
        self.assertEqual(self.pull("lay/a", "one").returncode, 0)
        cp = self.pull("lay/b", "two")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(self.umoci_tags(), ["one", "two"])
        self.assertEqual(self.digest("one"), self.a["digest"])
        self.assertEqual(self.digest("two"), self.b["digest"])
        self.assertEqual(self.umoci_hello("one"), "a\n")
        self.assertEqual(self.umoci_hello("two"), "b\n")
        # Nothing is left beside the layout or in it but the layout's own files.
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith(".lay")], [])
        leftovers = [f for _, _, fs in os.walk(self.lay) for f in fs if ".fpull-" in f]
        self.assertEqual(leftovers, [])
        # The image's tag is the default name, as for a new layout.
        cp = self.pull("lay/b")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(self.umoci_tags(), ["one", "two", "v1"])

    def test_existing_tag_needs_force_which_keeps_the_others(self):
        self.assertEqual(self.pull("lay/a", "one").returncode, 0)
        self.assertEqual(self.pull("lay/a", "keep").returncode, 0)
        with open(os.path.join(self.lay, "index.json")) as f:
            before = f.read()
        cp = self.pull("lay/b", "one")
        self.assertEqual(cp.returncode, 1, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("already has an image named one", line)
        self.assertIn("--force", line)
        with open(os.path.join(self.lay, "index.json")) as f:
            self.assertEqual(f.read(), before)
        # Refused before anything was downloaded.
        self.assertFalse(os.path.exists(os.path.join(
            self.cache, "blobs", "sha256", self.b["layers"][0]["digest"].split(":")[1])))
        cp = self.pull("lay/b", "one", "--force")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(self.umoci_tags(), ["keep", "one"])
        self.assertEqual(self.digest("one"), self.b["digest"])
        self.assertEqual(self.digest("keep"), self.a["digest"])
        self.assertEqual(self.umoci_hello("one"), "b\n")
        self.assertEqual(self.umoci_hello("keep"), "a\n")
        # skopeo reads the layout back and copies out of it.
        subprocess.run(["skopeo", "copy", "-q", "oci:%s:keep" % self.lay,
                        "oci:%s:k" % os.path.join(self.tmp, "copy")], check=True)

    def test_a_directory_that_is_not_a_layout_still_needs_force(self):
        os.makedirs(self.lay)
        with open(os.path.join(self.lay, "mine"), "w") as f:
            f.write("x")
        cp = self.pull("lay/a", "one")
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertIn("--force", fpull.error_line(cp.stderr))
        self.assertTrue(os.path.exists(os.path.join(self.lay, "mine")))


class TestLayoutDiskSpace(cases.RegistryCase):
    """Item 6: oci:, oci-archive: and docker-archive: check the free space before the
    download as a rootfs does; the bundle's message names DEST; a rootfs's estimate uses the
    layers' uncompressed sizes when the cached blobs say them; 'fpull cache prune' is
    suggested only where it makes room. Small tmpfs file systems stand for full disks."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        self.big = images.push_image(self.client, "d/big", "t", [
            [{"path": "big", "type": "file", "data": os.urandom(3000000)}]])
        self.ref = "%s/d/big:t" % self.reg.hostport
        self.cache = os.path.join(self.tmp, "cache")

    def small_fs(self, name, size="1m"):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", d])
        return d

    def downloaded(self, img):
        hexd = img["layers"][0]["digest"].split(":")[1]
        return [f for _, _, fs in os.walk(self.cache) for f in fs if hexd in f]

    def test_layouts_and_archives_are_refused_before_the_download(self):
        small = self.small_fs("small")
        for transport, name in (("oci", "lay"), ("oci-archive", "a.tar"),
                                ("docker-archive", "d.tar")):
            with self.subTest(transport=transport):
                dest = os.path.join(small, name)
                cp = fpull.run(["pull", "--cache-dir", self.cache, self.ref,
                                "%s:%s" % (transport, dest)])
                self.assertEqual(cp.returncode, 1, cp.stderr)
                line = fpull.error_line(cp.stderr)
                self.assertRegex(line, r"not enough disk space for %s: it needs about 3 MB and "
                                 r"1 MB are free there" % dest)
                self.assertNotIn("Write error", line)
                self.assertEqual(os.listdir(small), [])
                self.assertEqual(self.downloaded(self.big), [])

    def test_bundle_message_names_dest(self):
        small = self.small_fs("small")
        dest = os.path.join(small, "b")
        cp = fpull.run(["pull", "--format", "bundle", "--cache-dir", self.cache, self.ref, dest])
        self.assertEqual(cp.returncode, 1, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertNotIn("/proc/self/fd", line)
        self.assertIn("not enough disk space for %s/rootfs" % dest, line)

    def test_rootfs_estimate_uses_the_cached_layers_uncompressed_size(self):
        zeros = b"\0" * 4000000
        src = os.path.join(self.tmp, "zeros.tar")
        with open(src, "wb") as f:
            f.write(images.tar_layer([{"path": "zeros", "type": "file", "data": zeros}]))
        # zstd from a file writes the frame's content size, as skopeo's and buildah's do.
        subprocess.run(["zstd", "-q", "-f", "-3", src, "-o", src + ".zst"], check=True)
        with open(src, "rb") as f:
            raw = f.read()
        with open(src + ".zst", "rb") as f:
            zst = f.read()
        images.push_image(self.client, "d/zeros", "gz", [raw], compression="gzip")
        images.push_image(self.client, "d/zeros", "zst", [
            {"blob": zst, "media_type": "application/vnd.oci.image.layer.v1.tar+zstd",
             "diff_id": images.sha256_digest(raw)}])
        small = self.small_fs("small", size="2m")
        for tag in ("gz", "zst"):
            with self.subTest(tag=tag):
                ref = "%s/d/zeros:%s" % (self.reg.hostport, tag)
                fpull.run(["prefetch", "-q", "--cache-dir", self.cache, ref], check=0)
                dest = os.path.join(small, "r-" + tag)
                cp = fpull.run(["pull", "--cache-dir", self.cache, ref, dest])
                self.assertEqual(cp.returncode, 1, cp.stderr)
                line = fpull.error_line(cp.stderr)
                # The blob's own size (4 MB), not twice its few compressed kilobytes.
                self.assertRegex(line, r"not enough disk space for %s: it needs about 4 MB "
                                 r"and 2 MB are free there" % dest)
                self.assertEqual(os.listdir(small), [])

    def test_prune_is_suggested_only_where_it_makes_room(self):
        images.push_image(self.client, "d/zeros", "t", [
            [{"path": "zeros", "type": "file", "data": b"\0" * 4000000}]])
        ref = "%s/d/zeros:t" % self.reg.hostport
        # DEST full on its own file system, the cache elsewhere with room: pruning the
        # cache frees nothing there.
        small = self.small_fs("small")
        cp = fpull.run(["pull", "--cache-dir", self.cache, ref, os.path.join(small, "r")])
        self.assertEqual(cp.returncode, 1, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("No space left on device", line)
        self.assertIn("%s needs about" % os.path.join(small, "r"), line)
        self.assertNotIn("fpull cache prune", line)
        # DEST on the cache's file system: pruning makes room.
        both = self.small_fs("both", size="2m")
        cp = fpull.run(["pull", "--cache-dir", os.path.join(both, "cache"), self.ref,
                        "oci:" + os.path.join(both, "lay")])
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertIn("'fpull cache prune'", fpull.error_line(cp.stderr))


class TestSigningHabits(cases.RegistryCase):
    """Item 8: manifest push --sign-key reads cosign's encrypted key (COSIGN_PASSWORD or
    --sign-passphrase-file), and a push with tags: signs every pushed tag, so that each
    passes the default identity rule."""
    tools = ("openssl",)

    def setUp(self):
        super().setUp()
        self.R = self.reg.hostport
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache"), "COSIGN_PASSWORD": None}
        keydir = os.path.join(self.tmp, "keys")
        os.mkdir(keydir)
        self.priv, self.pub = sigstore.make_key(keydir, "k1")
        images.push_image(self.client, "src/a", "v1", [LAYER])
        self.spec = os.path.join(self.tmp, "spec.yaml")
        with open(self.spec, "w") as f:
            f.write("image: %s/test/multi:v1\ntags: [v1.0, latest]\nmanifests:\n"
                    "  - image: %s/src/a:v1\n    platform: {os: linux, architecture: amd64}\n"
                    % (self.R, self.R))
        self.pol = sigstore.policy(os.path.join(self.tmp, "p.json"),
                                   {"%s/test/multi" % self.R: [sigstore.key_req(self.pub)]})

    def push(self, *extra, env=None):
        e = dict(self.env)
        e.update(env or {})
        return fpull.run(["manifest", "push"] + list(extra) + [self.spec], env=e)

    def assert_every_tag_verifies(self):
        for tag in ("v1", "v1.0", "latest"):
            ref = "%s/test/multi:%s" % (self.R, tag)
            cp, doc = fpull.run_json(["pull", "--policy", self.pol, ref,
                                      os.path.join(self.tmp, "out-" + tag)], env=self.env)
            self.assertEqual(doc["signature"]["state"], "verified", tag)
            self.assertEqual(doc["signature"]["identity"], ref)

    def assert_nothing_pushed(self):
        status, _, _ = self.client.get("/v2/test/multi/manifests/v1")
        self.assertEqual(status, 404)

    def test_push_with_tags_signs_every_tag(self):
        cp = self.push("--sign-key", self.priv)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assert_every_tag_verifies()

    def test_cosign_encrypted_key_with_cosign_password(self):
        key = sigstore.cosign_key(self.priv, "s3cret pass", os.path.join(self.tmp, "cosign.key"))
        cp = self.push("--sign-key", key, env={"COSIGN_PASSWORD": "s3cret pass"})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assert_every_tag_verifies()

    def test_cosign_key_passphrase_file_and_refusals(self):
        # cosign before 2.0 wrote "ENCRYPTED COSIGN PRIVATE KEY"; the same format.
        key = sigstore.cosign_key(self.priv, "pw", os.path.join(self.tmp, "cosign.key"),
                                  header="COSIGN")
        # No passphrase at all: the next step, before anything is pushed.
        cp = self.push("--sign-key", key)
        self.assertEqual(cp.returncode, 2, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("cosign's encrypted key", line)
        self.assertIn("COSIGN_PASSWORD", line)
        self.assertIn("--sign-passphrase-file", line)
        self.assert_nothing_pushed()
        cp = self.push("--sign-key", key, env={"COSIGN_PASSWORD": "wrong"})
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("wrong passphrase", fpull.error_line(cp.stderr))
        self.assert_nothing_pushed()
        # skopeo's --sign-passphrase-file: its first line, and it wins over the environment.
        pw = os.path.join(self.tmp, "pw.txt")
        with open(pw, "w") as f:
            f.write("pw\nignored\n")
        cp = self.push("--sign-key", key, "--sign-passphrase-file", pw,
                       env={"COSIGN_PASSWORD": "wrong"})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assert_every_tag_verifies()
