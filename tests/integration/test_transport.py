"""Transport against the real registry behind a fault-injecting proxy: retries, resume
with Range, Retry-After, redirects without Authorization, digest checks, mirrors,
push side (issues 2, 5, 6)."""
import hashlib
import json
import os
import time
import unittest

import cases
import faultproxy
import fpull
import images
import regget
import pki
import registry
import tokenserver

BIG = os.urandom(300 * 1024)  # one incompressible raw layer, big enough to cut in the middle


class Transport(unittest.TestCase):
    def setUp(self):
        self.env = regget.Env()
        self.reg = registry.Registry().start()
        client = images.Client(self.reg.url)
        self.img = images.push_image(client, "t/img", "v1", [BIG], compression=None)
        self.layer = self.img["layers"][0]
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.out = os.path.join(self.env.dir, "blob")

    def tearDown(self):
        self.proxy.stop()
        self.reg.stop()
        self.env.cleanup()

    def blob(self, *opts, host=None):
        return self.env.run(*opts, "blob", host or self.proxy.hostport, "t/img",
                            self.layer["digest"], self.out)

    def check_blob_file(self):
        with open(self.out, "rb") as f:
            data = f.read()
        self.assertEqual(len(data), self.layer["size"])
        self.assertEqual("sha256:" + hashlib.sha256(data).hexdigest(), self.layer["digest"])

    def test_503_once_then_success(self):
        self.proxy.add(r"/manifests/", status=503, times=1)
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.proxy.count("/manifests/v1"), 2)

    def test_persistent_503_exit_6_after_tries(self):
        self.proxy.add(r"/manifests/", status=503)
        r = self.env.run("--tries", "3", "manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("HTTP 503", r.stderr)
        self.assertEqual(self.proxy.count("/manifests/v1"), 3)

    def test_default_five_tries(self):
        self.proxy.add(r"/blobs/", status=502)
        r = self.blob()
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertEqual(self.proxy.count("/blobs/"), 5)

    def test_reset_mid_blob_resumes_with_range(self):
        self.proxy.add(r"/blobs/", reset_after=100000, times=1)
        r = self.blob()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        reqs = self.proxy.matching("/blobs/")
        self.assertEqual(len(reqs), 2)
        self.assertNotIn("range", reqs[0]["headers"])
        rng = reqs[1]["headers"].get("range", "")
        self.assertTrue(rng.startswith("bytes="), rng)
        start = int(rng[6:].rstrip("-"))
        self.assertGreater(start, 0)
        self.assertLessEqual(start, 100000)
        f = regget.fields(r.stdout)
        self.assertEqual(f["restarts"], "1")
        # Only what was missing came again.
        self.assertEqual(int(f["received"]), self.layer["size"])

    def test_many_resets_with_progress_survive_the_try_limit(self):
        # Eight interruptions with --tries 3: each one made progress, so none is fatal.
        self.proxy.add(r"/blobs/", reset_after=30000, times=8)
        r = self.blob("--tries", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        self.assertEqual(self.proxy.count("/blobs/"), 9)
        self.assertEqual(int(regget.fields(r.stdout)["received"]), self.layer["size"])

    def test_resets_without_progress_are_bounded(self):
        self.proxy.add(r"/blobs/", reset_after=0)
        r = self.blob("--tries", "3")
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertEqual(self.proxy.count("/blobs/"), 3)

    def test_range_ignored_starts_over(self):
        self.proxy.add(r"/blobs/", reset_after=100000, times=1)
        self.proxy.add(r"/blobs/", range_only=True, strip_range=True)
        r = self.blob()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        f = regget.fields(r.stdout)
        self.assertEqual(int(f["received"]), self.layer["size"] + 100000)

    def test_resume_from_partial_file(self):
        # A partial file from an earlier, killed run: only the rest is asked for.
        with open(self.out, "wb") as f:
            f.write(BIG[:123456])
        r = self.blob()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        reqs = self.proxy.matching("/blobs/")
        self.assertEqual(reqs[0]["headers"].get("range"), "bytes=123456-")
        self.assertEqual(regget.fields(r.stdout)["first_offset"], "123456")

    def test_429_retry_after_honoured(self):
        self.proxy.add(r"/blobs/", status=429, times=1, headers={"Retry-After": "2"})
        t0 = time.monotonic()
        r = self.blob()
        elapsed = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        self.assertGreaterEqual(elapsed, 2.0)
        reqs = self.proxy.matching("/blobs/")
        self.assertEqual(len(reqs), 2)
        self.assertGreaterEqual(reqs[1]["time"] - reqs[0]["time"], 1.9)

    def test_connection_refused_not_retried_exit_6(self):
        # Issue 41: a refused connection (nothing listens there) is not retried: backoff
        # changes nothing about it and only delayed a step's cached image by seconds.
        port = registry.free_port()
        self.env.env["FPULL_RETRY_BASE_MS"] = "4000"
        t0 = time.monotonic()
        r = self.env.run("--tries", "3", "manifest", "127.0.0.1:%d" % port, "t/img", "v1")
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("cannot reach registry", r.stderr)
        self.assertNotIn("tries)", r.stderr)
        self.assertLess(time.monotonic() - t0, 2)  # one retry would have waited 2 s or more

    def test_trickle(self):
        self.proxy.add(r"/blobs/", trickle=(16384, 0.005))
        r = self.blob()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()

    def test_stalled_transfer_times_out_and_resumes(self):
        self.env.env["FPULL_STALL_TIMEOUT"] = "2"
        self.proxy.add(r"/blobs/", stall=(70000, 30), times=1)
        t0 = time.monotonic()
        r = self.blob()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_blob_file()
        self.assertLess(time.monotonic() - t0, 20)  # curl averages speed over ~5 s
        reqs = self.proxy.matching("/blobs/")
        self.assertEqual(len(reqs), 2)
        self.assertEqual(reqs[1]["headers"].get("range"), "bytes=70000-")

    def test_lying_docker_content_digest_exit_7(self):
        self.proxy.add(r"/manifests/", headers={"Docker-Content-Digest": "sha256:" + "1" * 64})
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("Docker-Content-Digest", r.stderr)

    def test_lying_sha512_docker_content_digest_exit_7(self):
        # Issue 33: a sha512 Docker-Content-Digest on a tag fetch was not checked at all; it
        # is hashed for and checked as a sha256 one is. The right one passes.
        self.proxy.add(r"/manifests/", headers={"Docker-Content-Digest": "sha512:" + "1" * 128})
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("Docker-Content-Digest sha512:1111", r.stderr)
        right = "sha512:" + hashlib.sha512(self.img["manifest"]).hexdigest()
        self.proxy.clear()
        self.proxy.add(r"/manifests/", headers={"Docker-Content-Digest": right})
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_by_digest_verified_exit_7(self):
        other = json.dumps({"schemaVersion": 2, "layers": []}).encode()
        self.proxy.add(r"/manifests/", replace_body=other)
        r = self.env.run("manifest", self.proxy.hostport, "t/img", self.img["digest"])
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn(self.img["digest"], r.stderr)

    def test_by_digest_ok(self):
        r = self.env.run("manifest", self.proxy.hostport, "t/img", self.img["digest"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])

    def test_manifest_accept_and_no_content_decoding(self):
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        req = self.proxy.matching("/manifests/v1")[0]
        accept = req["headers"]["accept"]
        for mt in ("application/vnd.oci.image.index.v1+json",
                   "application/vnd.oci.image.manifest.v1+json",
                   "application/vnd.docker.distribution.manifest.list.v2+json",
                   "application/vnd.docker.distribution.manifest.v2+json"):
            self.assertIn(mt, accept)
        self.assertNotIn("accept-encoding", req["headers"])

    def test_manifest_over_4mib_refused(self):
        self.proxy.add(r"/manifests/", replace_body=b" " * (4 * 1024 * 1024 + 10))
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("over 4 MiB", r.stderr)

    def test_endless_error_body_is_cut_and_status_kept(self):
        self.proxy.add(r"/manifests/", status=404, body=b"x" * (3 * 1024 * 1024),
                       headers={"Content-Type": "text/plain"})
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 5, r.stderr)

    def test_huge_body_on_upload_answer_is_cut(self):
        data = b"some blob"
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        path = os.path.join(self.env.dir, "up")
        with open(path, "wb") as f:
            f.write(data)
        self.proxy.add(r"/blobs/uploads/.*digest=", method="PUT", status=201,
                       body=b"y" * (3 * 1024 * 1024))
        r = self.env.run("put-blob", self.proxy.hostport, "p/one", digest, path)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_schema1_refused(self):
        body = json.dumps({"schemaVersion": 1, "name": "t/img", "tag": "v1",
                           "fsLayers": []}).encode()
        self.proxy.add(r"/manifests/", replace_body=body,
                       headers={"Content-Type":
                                "application/vnd.docker.distribution.manifest.v1+prettyjws",
                                "Docker-Content-Digest":
                                "sha256:" + hashlib.sha256(body).hexdigest()})
        r = self.env.run("manifest", self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 8, r.stderr)
        self.assertIn("schema 1", r.stderr)
        # One message, whichever way schema 1 is recognised (issue 23.7); the caller names
        # the reference.
        self.assertEqual(r.stderr.count("schema 1"), 1, r.stderr)

    def test_redirect_loop_and_bad_schemes_refused(self):
        self.proxy.add(r"/blobs/", redirect="http://%s{path}" % self.proxy.hostport)
        r = self.blob()
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("more than 10 redirects", r.stderr)
        self.assertEqual(self.proxy.count("/blobs/"), 11)
        self.proxy.clear()
        self.proxy.add(r"/blobs/", redirect="file:///etc/passwd")
        r = self.blob()
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("non-HTTP", r.stderr)

    def test_mirror_used_first(self):
        mirror = faultproxy.FaultProxy(self.reg.url).start()
        try:
            r = self.env.run("--mirror", mirror.url, "manifest", self.proxy.hostport, "t/img",
                             "v1")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(mirror.count("/manifests/v1"), 1)
            self.assertEqual(self.proxy.count("/manifests/v1"), 0)
        finally:
            mirror.stop()

    def test_lying_mirror_is_harmless(self):
        mirror = faultproxy.FaultProxy(self.reg.url).start()
        try:
            mirror.add(r"/blobs/", replace_body=b"x" * len(BIG))
            r = self.blob("--mirror", mirror.url)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.check_blob_file()
            self.assertEqual(mirror.count("/blobs/"), 1)
            self.assertEqual(self.proxy.count("/blobs/"), 1)
        finally:
            mirror.stop()

    def test_dead_mirror_falls_back(self):
        port = registry.free_port()
        r = self.env.run("--tries", "2", "--mirror", "http://127.0.0.1:%d" % port, "manifest",
                         self.proxy.hostport, "t/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.proxy.count("/manifests/v1"), 1)

    def test_pull_through_cache_mirror(self):
        cache = registry.Registry(proxy={"remoteurl": self.reg.url}).start()
        try:
            r = self.blob("--mirror", cache.url)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.check_blob_file()
            # The pull-through cache fetched it from upstream; fpull never had to.
            self.assertEqual(self.proxy.count("/blobs/"), 0)
            r = self.env.run("--mirror", cache.url, "manifest", self.proxy.hostport, "t/img",
                             "v1")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])
        finally:
            cache.stop()

    def test_https_refused_without_insecure_no_http_fallback(self):
        # A non-loopback name for a plain-HTTP server: HTTPS fails, HTTP is not used; one
        # GET of /v2/ without credentials only tells that the server speaks plain HTTP
        # (exit 2, a setting missing: issue 43.1).
        name = "plain.fpull.test:%d" % self.proxy.port
        self.env.env["FPULL_RESOLVE"] = "plain.fpull.test:%d:127.0.0.1" % self.proxy.port
        r = self.env.run("--tries", "1", "manifest", name, "t/img", "v1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("speaks plain HTTP", r.stderr)
        self.assertEqual([q["path"] for q in self.proxy.requests], ["/v2/"])
        self.assertNotIn("authorization", self.proxy.requests[0]["headers"])
        r = self.env.run("--insecure", "manifest", name, "t/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_push_side(self):
        data = b"pushed blob " * 1000
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        path = os.path.join(self.env.dir, "up")
        with open(path, "wb") as f:
            f.write(data)
        r = self.env.run("exists", self.reg.hostport, "p/one", digest)
        self.assertEqual((r.returncode, r.stdout), (0, "exists 0\n"), r.stderr)
        r = self.env.run("put-blob", self.reg.hostport, "p/one", digest, path)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.env.run("exists", self.reg.hostport, "p/one", digest)
        self.assertEqual(r.stdout, "exists 1\n", r.stderr)
        r = self.env.run("mount", self.reg.hostport, "p/two", digest, "p/one")
        self.assertEqual(r.stdout, "mounted 1\n", r.stderr)
        r = self.env.run("exists", self.reg.hostport, "p/two", digest)
        self.assertEqual(r.stdout, "exists 1\n", r.stderr)
        r = self.env.run("mount", self.reg.hostport, "p/three", "sha256:" + "2" * 64, "p/one")
        self.assertEqual(r.stdout, "mounted 0\n", r.stderr)
        # Wrong bytes for the digest: the registry refuses with DIGEST_INVALID.
        r = self.env.run("put-blob", self.reg.hostport, "p/one", "sha256:" + "3" * 64, path)
        self.assertEqual(r.returncode, 7, r.stderr)
        mpath = os.path.join(self.env.dir, "manifest.json")
        with open(mpath, "wb") as f:
            f.write(self.img["manifest"])
        layer = self.img["layers"][0]["digest"]
        for d in (self.img["config_digest"], layer):
            r = self.env.run("mount", self.reg.hostport, "p/one", d, "t/img")
            self.assertEqual(r.stdout, "mounted 1\n", r.stderr)
        r = self.env.run("put-manifest", self.reg.hostport, "p/one", "v9",
                         self.img["media_type"], mpath)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])
        r = self.env.run("manifest", self.reg.hostport, "p/one", "v9")
        self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])


class RedirectAuth(unittest.TestCase):
    """A blob redirect to another origin never carries the registry's Authorization."""

    def setUp(self):
        self.env = regget.Env()
        self.ts = tokenserver.TokenServer(users={"alice": "pw-alice"}).start()
        self.reg = registry.Registry(auth=self.ts.registry_auth()).start()
        client = images.Client(self.reg.url, username="alice", password="pw-alice")
        self.img = images.push_image(client, "r/img", "v1", [BIG], compression=None)
        self.layer = self.img["layers"][0]
        self.front = faultproxy.FaultProxy(self.reg.url).start()
        self.env.login(self.front.hostport, "alice", "pw-alice")
        self.out = os.path.join(self.env.dir, "blob")

    def tearDown(self):
        self.front.stop()
        self.reg.stop()
        self.ts.stop()
        self.env.cleanup()

    def redirect_to(self, host):
        # The target serves the blob itself, like a storage backend with signed URLs.
        target = faultproxy.FaultProxy(None, host=host).start()
        with open(self.reg.blob_path(self.layer["digest"]), "rb") as f:
            target.add(r"^/storage/", status=200, body=f.read(),
                       headers={"Content-Type": "application/octet-stream"})
        self.front.add(r"/blobs/sha256:",
                       redirect="http://%s/storage/blob?sig=1" % target.hostport)
        return target

    def check(self, target):
        try:
            r = self.env.run("blob", self.front.hostport, "r/img", self.layer["digest"],
                             self.out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(self.out, "rb") as f:
                self.assertEqual(f.read(), BIG)
            front = self.front.matching("/blobs/sha256:")
            self.assertTrue(front)
            self.assertTrue(front[-1]["headers"].get("authorization", "").startswith("Bearer "))
            got = target.matching("^/storage/")
            self.assertEqual(len(got), 1)
            self.assertNotIn("authorization", got[0]["headers"])
        finally:
            target.stop()

    def test_parallel_downloads_share_one_handle(self):
        # 8 threads, 24 blob fetches through one registry handle: one ping, one token,
        # connections reused (far fewer TCP connections than requests).
        layers = [self.layer["digest"], self.img["config_digest"]]
        self.ts.requests.clear()
        r = self.env.run("parallel", self.front.hostport, "r/img", "8", *(layers * 12))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "ok 24\n")
        self.assertEqual(self.front.count("^/v2/$"), 1)
        self.assertEqual(len(self.ts.requests), 1)
        blob_reqs = self.front.matching("/blobs/")
        self.assertEqual(len(blob_reqs), 24)
        conns = {q["client"] for q in self.front.requests}
        self.assertLessEqual(len(conns), 9)

    def test_redirect_to_other_address_drops_authorization(self):
        self.check(self.redirect_to("127.0.0.2"))

    def test_signed_redirect_query_not_logged(self):
        target = self.redirect_to("127.0.0.2")
        try:
            r = self.env.run("-v", "blob", self.front.hostport, "r/img", self.layer["digest"],
                             self.out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("/storage/blob?...", r.stderr)
            self.assertNotIn("sig=1", r.stderr)
            self.assertNotIn("pw-alice", r.stderr)
        finally:
            target.stop()

    def test_redirect_to_other_port_drops_authorization(self):
        self.check(self.redirect_to("127.0.0.1"))

    def test_same_origin_redirect_keeps_authorization(self):
        self.front.add(r"/blobs/sha256:", times=1,
                       redirect="http://%s{path}" % self.front.hostport)
        r = self.env.run("blob", self.front.hostport, "r/img", self.layer["digest"], self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        reqs = self.front.matching("/blobs/sha256:")
        self.assertEqual(len(reqs), 2)
        self.assertTrue(all(q["headers"].get("authorization") for q in reqs))


class CLITransport(unittest.TestCase):
    """Faults under `fpull pull`: the pull still succeeds, or fails with the right code."""

    def setUp(self):
        cases.require_tools(self)
        self.env = regget.Env()
        self.reg = registry.Registry().start()
        client = images.Client(self.reg.url)
        self.img = images.push_image(client, "t/cli", "v1",
                                     [[{"path": "big", "data": BIG}]], compression=None)
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.vars = {"HOME": self.env.home, "FPULL_CACHE": os.path.join(self.env.dir, "cache"),
                     "FPULL_RETRY_BASE_MS": "20"}
        self.dest = os.path.join(self.env.dir, "rootfs")
        self.ref = "%s/t/cli:v1" % self.proxy.hostport

    def tearDown(self):
        self.proxy.stop()
        self.reg.stop()
        self.env.cleanup()

    def check_rootfs(self):
        with open(os.path.join(self.dest, "big"), "rb") as f:
            self.assertEqual(f.read(), BIG)

    def test_cli_reset_mid_blob_resumes(self):
        layer = self.img["layers"][0]["digest"]
        self.proxy.add(r"/blobs/" + layer, reset_after=150000, times=1)
        cp, doc = fpull.run_json(["pull", self.ref, self.dest], env=self.vars)
        self.check_rootfs()
        reqs = self.proxy.matching("/blobs/" + layer)
        self.assertEqual(len(reqs), 2)
        self.assertTrue(reqs[1]["headers"].get("range", "").startswith("bytes="))
        # bytes_downloaded counts what was received, retries included, not more.
        total = self.img["layers"][0]["size"] + os.path.getsize(
            self.reg.blob_path(self.img["config_digest"]))
        self.assertEqual(doc["bytes_downloaded"], total)

    def test_cli_503_and_429(self):
        self.proxy.add(r"/manifests/", status=503, times=1)
        self.proxy.add(r"/blobs/", status=429, times=1, headers={"Retry-After": "1"})
        fpull.run(["pull", self.ref, self.dest], env=self.vars, check=0)
        self.check_rootfs()

    def test_cli_persistent_failure_exit_6(self):
        self.proxy.add(r"/blobs/", status=500)
        r = fpull.run(["pull", self.ref, self.dest], env=self.vars, check=6)
        self.assertIn("HTTP 500", fpull.error_line(r.stderr))
        self.assertFalse(os.path.exists(self.dest))

    def test_cli_lying_digest_header_exit_7(self):
        self.proxy.add(r"/manifests/", headers={"Docker-Content-Digest": "sha256:" + "4" * 64})
        r = fpull.run(["pull", self.ref, self.dest], env=self.vars, check=7)
        fpull.error_line(r.stderr)

    def test_cli_config_mirror(self):
        mirror = faultproxy.FaultProxy(self.reg.url).start()
        try:
            cfg = os.path.join(self.env.dir, "config.yaml")
            with open(cfg, "w") as f:
                f.write('registry-mirrors:\n  "%s": ["%s"]\n' % (self.proxy.hostport,
                                                                  mirror.url))
            env = dict(self.vars, FPULL_CONFIG=cfg)
            fpull.run(["pull", self.ref, self.dest], env=env, check=0)
            self.check_rootfs()
            self.assertGreaterEqual(mirror.count("/blobs/"), 2)
            self.assertEqual(self.proxy.count("/blobs/"), 0)
        finally:
            mirror.stop()

    def test_insecure_names_the_registry_not_its_mirrors(self):
        # A TLS mirror whose certificate nobody trusts, under a host name that is not a
        # loopback literal: --insecure is about IMAGE's registry only, so the mirror is not
        # used (its certificate fails) and the pull comes from the registry; naming the
        # mirror in insecure-registries is how to accept it.
        ca = pki.CA(os.path.join(self.env.dir, "pki"))
        cert, key = ca.issue("mirror", dns=("mirror.fpull.test",))
        mirror = registry.Registry(tls=(cert, key), proxy={"remoteurl": self.reg.url}).start()
        try:
            host = "mirror.fpull.test:%d" % mirror.port
            env = dict(self.vars, FPULL_RESOLVE="%s:127.0.0.1" % host)
            cfg = os.path.join(self.env.dir, "config.yaml")
            with open(cfg, "w") as f:
                f.write('registry-mirrors:\n  "%s": ["https://%s"]\n' % (self.proxy.hostport,
                                                                           host))
            env["FPULL_CONFIG"] = cfg
            fpull.run(["pull", "--insecure", self.ref, self.dest], env=env, check=0)
            self.check_rootfs()
            self.assertGreaterEqual(self.proxy.count("/blobs/"), 2)
            fpull.rmtree(self.dest)
            fpull.rmtree(os.path.join(self.env.dir, "cache"))
            self.proxy.clear()
            with open(cfg, "a") as f:
                f.write('insecure-registries: ["%s"]\n' % host)
            fpull.run(["pull", self.ref, self.dest], env=env, check=0)
            self.check_rootfs()
            self.assertEqual(self.proxy.count("/blobs/"), 0)
        finally:
            mirror.stop()


if __name__ == "__main__":
    unittest.main()
