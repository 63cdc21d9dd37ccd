"""fpull serve with plain HTTP clients: which registry a request means, this node's entry
for a tag, documents by digest, blobs through the cache (streamed, fetched once, ranges),
the registry down, the signature policy, --print-config."""
import concurrent.futures
import hashlib
import json
import os
import socket
import threading
import time

import cases
import demo_index
import faultproxy
import fpull
import images
from serve import Serve

TAG = "1.12.0-rev9"
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json,"
               "application/vnd.docker.distribution.manifest.list.v2+json,"
               "application/vnd.oci.image.manifest.v1+json,"
               "application/vnd.docker.distribution.manifest.v2+json")
ACCEPT = {"Accept": INDEX_TYPES}


def upstream_gets(reg, digest):
    """How many times the registry sent blob digest: its access log line comes after the
    body, so a moment after the client has it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not reg.blob_gets().get(digest):
        time.sleep(0.1)
    time.sleep(0.3)  # a second GET, were there one, would be logged by now
    return reg.blob_gets().get(digest)


def sha(body):
    return "sha256:" + hashlib.sha256(body).hexdigest()


class ServeCase(cases.RegistryCase):
    tmp_prefix = "fpull-serve-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.env = {"FPULL_CACHE": self.cache}

    def serve(self, *args, env=None, **kw):
        e = dict(self.env)
        e.update(env or {})
        s = Serve(list(args), env=e, workdir=self.tmp, **kw).start()
        self.addCleanup(s.stop)
        return s

    def demo(self):
        self.demo_info = demo_index.build_demo(self.client)
        self.by_name = {n: d for n, d, _ in self.demo_info["entries"]}
        return self.demo_info

    def tag_path(self, tag=TAG, repo="qnib/cv-tf"):
        return "/v2/%s/manifests/%s?ns=%s" % (repo, tag, self.reg.hostport)

    def amd64_entries(self, index):
        return [m for m in index["manifests"]
                if m.get("platform", {}).get("architecture") == "amd64"]


class NodeChoice(ServeCase):
    def check_tag_gives(self, features, name):
        self.demo()
        s = self.serve("--platform", "linux/amd64", "--features", features)
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 200, body)
        self.assertEqual(h["docker-content-digest"], sha(body))
        self.assertEqual(h["content-type"], "application/vnd.oci.image.index.v1+json")
        index = json.loads(body)
        amd = self.amd64_entries(index)
        self.assertEqual([m["digest"] for m in amd], [self.by_name[name]])
        # The same bytes by that digest, GET and HEAD, also once the registry is gone.
        st2, h2, body2 = s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (
            h["docker-content-digest"], self.reg.hostport), ACCEPT)
        self.assertEqual((st2, body2), (200, body))
        st3, h3, body3 = s.head(self.tag_path(), ACCEPT)
        self.assertEqual((st3, body3), (200, b""))
        self.assertEqual(h3["docker-content-digest"], h["docker-content-digest"])
        self.assertEqual(int(h3["content-length"]), len(body))
        self.assertIn("more features", s.log())  # the explanation of the choice is logged
        return s, h["docker-content-digest"], body

    def test_tag_answers_this_nodes_entry(self):
        self.check_tag_gives("skylake", "cv-tf-dev:skylake_1.12.0-rev6")

    def test_generic_features_give_the_generic_entry(self):
        self.demo()
        s = self.serve("--platform", "linux/amd64", "--features", "x86-64-v2")
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 200, body)
        amd = self.amd64_entries(json.loads(body))
        self.assertEqual([m["digest"] for m in amd], [self.by_name["cv-tf-dev:1.12.0-rev11"]])

    def test_same_choice_as_fpull_digest_on_this_node(self):
        self.demo()
        ref = "%s/qnib/cv-tf:%s" % (self.reg.hostport, TAG)
        want = fpull.run(["digest", ref], env=self.env, check=0).stdout.strip()
        s = self.serve()
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 200, body)
        self.assertIn(want, [m["digest"] for m in json.loads(body)["manifests"]])

    def test_by_digest_index_is_byte_identical(self):
        info = self.demo()
        s = self.serve("--features", "skylake")
        st, h, body = s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (
            info["index_digest"], self.reg.hostport), ACCEPT)
        self.assertEqual(st, 200, body)
        self.assertEqual(sha(body), info["index_digest"])
        self.assertEqual(h["docker-content-digest"], info["index_digest"])
        self.assertEqual(len(json.loads(body)["manifests"]), 11)

    def test_other_platforms_keep_their_best_entry(self):
        gen = images.push_image(self.client, "hpc/multi", "arm-gen", [images.random_layer("g")],
                                architecture="arm64")
        fast = images.push_image(self.client, "hpc/multi", "arm-fast",
                                 [images.random_layer("f")], architecture="arm64")
        a1 = images.push_image(self.client, "hpc/multi", "amd-gen", [images.random_layer("a")])
        a2 = images.push_image(self.client, "hpc/multi", "amd-sky", [images.random_layer("b")])
        images.push_index(self.client, "hpc/multi", "v1", [
            (fast, {"os": "linux", "architecture": "arm64", "features": ["neoverse-v1"]}),
            (a1, {"os": "linux", "architecture": "amd64"}),
            (gen, {"os": "linux", "architecture": "arm64"}),
            (a2, {"os": "linux", "architecture": "amd64", "features": ["skylake"]}),
        ])
        s = self.serve("--platform", "linux/amd64", "--features", "skylake")
        st, h, body = s.get(self.tag_path("v1", "hpc/multi"), ACCEPT)
        self.assertEqual(st, 200, body)
        got = [m["digest"] for m in json.loads(body)["manifests"]]
        # Document order; arm64 keeps the entry a node without features pulls.
        self.assertEqual(got, [gen["digest"], a2["digest"]])

    def test_client_without_index_types_gets_the_manifest(self):
        self.demo()
        s = self.serve("--platform", "linux/amd64", "--features", "skylake")
        st, h, body = s.get(self.tag_path(), {
            "Accept": "application/vnd.oci.image.manifest.v1+json"})
        self.assertEqual(st, 200, body)
        self.assertEqual(sha(body), self.by_name["cv-tf-dev:skylake_1.12.0-rev6"])
        self.assertEqual(h["docker-content-digest"], sha(body))


class Routing(ServeCase):
    def test_ns_first_component_and_docker_io(self):
        img = images.push_image(self.client, "library/alpine", "3", [images.random_layer("x")])
        images.push_image(self.client, "qnib/plain", "v1", [images.random_layer("y")])
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write('registry-mirrors:\n  docker.io: ["%s"]\ninsecure-registries: ["%s"]\n'
                    % (self.reg.url, self.reg.hostport))
        s = self.serve("--config", cfg)
        # containerd: ?ns=
        st, h, _ = s.get("/v2/library/alpine/manifests/3?ns=%s" % self.reg.hostport, ACCEPT)
        self.assertEqual((st, h.get("docker-content-digest")), (200, img["digest"]))
        # podman: /v2/REGISTRY/REPO
        st, h, _ = s.get("/v2/%s/library/alpine/manifests/3" % self.reg.hostport, ACCEPT)
        self.assertEqual((st, h.get("docker-content-digest")), (200, img["digest"]))
        # docker: docker.io, library/ for one component (through the config's mirror)
        st, h, _ = s.get("/v2/alpine/manifests/3", ACCEPT)
        self.assertEqual((st, h.get("docker-content-digest")), (200, img["digest"]))
        st, _, _ = s.get("/v2/qnib/plain/manifests/v1", ACCEPT)
        self.assertEqual(st, 200)
        self.assertIn("docker.io/library/alpine:3", s.log())

    def test_base_and_unknown(self):
        s = self.serve()
        st, h, body = s.get("/v2/")
        self.assertEqual((st, body), (200, b"{}"))
        self.assertEqual(h["docker-distribution-api-version"], "registry/2.0")
        st, _, body = s.get("/v2/_catalog")
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["errors"][0]["code"], "UNSUPPORTED")
        st, _, body = s.get(self.tag_path("nope", "hpc/none"))
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["errors"][0]["code"], "MANIFEST_UNKNOWN")


class Blobs(ServeCase):
    def image(self, size=3 * 1024 * 1024):
        data = os.urandom(size)
        img = images.push_image(self.client, "hpc/big", "v1",
                                [{"blob": data, "media_type":
                                  "application/vnd.oci.image.layer.v1.tar",
                                  "diff_id": sha(data)}])
        return img, data

    def blob_path(self, s, digest):
        return "/v2/%s/hpc/big/blobs/%s" % (self.reg.hostport, digest)

    def test_eight_clients_one_upstream_fetch_and_first_bytes_early(self):
        img, data = self.image()
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(65536, 0.05))  # ~1.3 MB/s: over 2 s for the blob
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write('insecure-registries: ["%s"]\n' % proxy.hostport)
        s = self.serve("--config", cfg)
        st, _, _ = s.get("/v2/%s/hpc/big/manifests/v1" % proxy.hostport, ACCEPT)
        self.assertEqual(st, 200)
        layer = img["layers"][0]["digest"]
        path = "/v2/%s/hpc/big/blobs/%s" % (proxy.hostport, layer)
        cached = os.path.join(self.cache, "blobs", "sha256", layer.split(":")[1])
        first = {}

        def client(i):
            c = s.conn()
            c.request("GET", path)
            r = c.getresponse()
            head = r.read(4096)
            first[i] = os.path.exists(cached)
            rest = r.read()
            c.close()
            return r.status, head + rest

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            results = list(ex.map(client, range(8)))
        for st, body in results:
            self.assertEqual(st, 200)
            self.assertEqual(sha(body), layer)
        # Each client had bytes while the blob was still arriving.
        self.assertEqual(sorted(first.values()), [False] * 8)
        self.assertEqual(proxy.count(r"/blobs/" + layer), 1)
        self.assertEqual(upstream_gets(self.reg, layer), 1)
        self.assertTrue(os.path.isfile(cached))

    def test_range_and_head(self):
        img, data = self.image(300000)
        s = self.serve()
        self.assertEqual(s.get("/v2/%s/hpc/big/manifests/v1" % self.reg.hostport, ACCEPT)[0],
                         200)
        layer = img["layers"][0]["digest"]
        path = self.blob_path(s, layer)
        st, h, body = s.head(path)
        self.assertEqual((st, body, int(h["content-length"])), (200, b"", len(data)))
        self.assertEqual(h["docker-content-digest"], layer)
        for attempt in ("in flight or not cached", "cached"):
            st, h, body = s.get(path, {"Range": "bytes=1000-1999"})
            self.assertEqual((st, body), (206, data[1000:2000]), attempt)
            self.assertEqual(h["content-range"], "bytes 1000-1999/%d" % len(data))
            st, h, body = s.get(path, {"Range": "bytes=-10"})
            self.assertEqual((st, body), (206, data[-10:]))
        st, h, body = s.get(path, {"Range": "bytes=999999-"})
        self.assertEqual(st, 416)
        self.assertEqual(h["content-range"], "bytes */%d" % len(data))
        st, h, body = s.get(path)
        self.assertEqual((st, sha(body)), (200, layer))
        self.assertEqual(upstream_gets(self.reg, layer), 1, self.reg.log()[-3000:])

    def test_unknown_blob_is_404(self):
        s = self.serve()
        st, _, body = s.get("/v2/%s/hpc/big/blobs/sha256:%s" % (self.reg.hostport, "0" * 64))
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["errors"][0]["code"], "BLOB_UNKNOWN")


class DownAndPolicy(ServeCase):
    def test_registry_down_answers_from_the_cache(self):
        self.demo()
        s = self.serve("--platform", "linux/amd64", "--features", "skylake")
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 200, body)
        chosen = self.by_name["cv-tf-dev:skylake_1.12.0-rev6"]
        st, _, manifest = s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (chosen,
                                                                        self.reg.hostport))
        layer = json.loads(manifest)["layers"][0]["digest"]
        self.assertEqual(s.get("/v2/qnib/cv-tf/blobs/%s?ns=%s" % (layer, self.reg.hostport))[0],
                         200)
        self.reg.stop()
        for server in (s, self.serve("--offline", "--platform", "linux/amd64", "--features",
                                     "skylake")):
            st2, h2, body2 = server.get(self.tag_path(), ACCEPT)
            self.assertEqual((st2, body2), (200, body), server.log())
            self.assertEqual(h2["docker-content-digest"], h["docker-content-digest"])
            st3, _, blob = server.get("/v2/qnib/cv-tf/blobs/%s?ns=%s" % (layer,
                                                                        self.reg.hostport))
            self.assertEqual((st3, sha(blob)), (200, layer))
        self.assertIn("answering from the cache's tag records", s.log())

    def test_policy_rejection_is_403_and_nothing_is_served(self):
        self.demo()
        policy = os.path.join(self.tmp, "policy.json")
        with open(policy, "w") as f:
            json.dump({"default": [{"type": "reject"}]}, f)
        s = self.serve("--policy", policy, "--features", "skylake")
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 403, body)
        err = json.loads(body)["errors"][0]
        self.assertEqual(err["code"], "DENIED")
        self.assertIn("reject", err["message"])
        chosen = self.by_name["cv-tf-dev:skylake_1.12.0-rev6"]
        st, _, body = s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (chosen, self.reg.hostport))
        self.assertEqual(st, 403, body)
        # Nothing of the image went into the cache: no manifest, no config, no layer.
        blobs = os.path.join(self.cache, "blobs", "sha256")
        self.assertNotIn(chosen.split(":")[1], os.listdir(blobs) if os.path.isdir(blobs) else [])
        st, _, _ = s.get("/v2/qnib/cv-tf/blobs/%s?ns=%s" % (chosen, self.reg.hostport))
        self.assertEqual(st, 404)


class Housekeeping(ServeCase):
    """fpull cache prune beside a running serve (it takes no pins: man fpull, SERVE)."""

    def test_prune_keeps_the_reduced_index_it_answered(self):
        # The reduced index is in the cache alone (the registry never had it) and no tag
        # record names it: without its last-use stamp, a plain prune removed it as a blob no
        # image needs, and the client's GET by the digest the tag gave was a 404.
        self.demo()
        s = self.serve("--platform", "linux/amd64", "--features", "skylake")
        st, h, body = s.get(self.tag_path(), ACCEPT)
        self.assertEqual(st, 200, body)
        reduced = h["docker-content-digest"]
        listing = fpull.run(["cache", "ls"], env=self.env, check=0).stdout
        # An image of its own, as a pull by digest is.
        self.assertRegex(listing, r"(?m)^%s/qnib/cv-tf@ +%s " % (self.reg.hostport,
                                                                 reduced[7:19]))
        fpull.run(["cache", "prune"], env=self.env, check=0)
        fpull.run(["cache", "prune", "--older-than", "1h"], env=self.env, check=0)
        st2, _, body2 = s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (reduced, self.reg.hostport),
                              ACCEPT)
        self.assertEqual((st2, body2), (200, body), s.log()[-2000:])
        # --all removes it as every image; asking the tag again puts it back.
        fpull.run(["cache", "prune", "--all"], env=self.env, check=0)
        self.assertEqual(s.get("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (
            reduced, self.reg.hostport), ACCEPT)[0], 404)
        st3, h3, body3 = s.get(self.tag_path(), ACCEPT)
        self.assertEqual((st3, h3["docker-content-digest"], body3), (200, reduced, body))

    def test_a_blob_streaming_survives_prune_all(self):
        size = 16 * 1024 * 1024
        data = os.urandom(size)
        img = images.push_image(self.client, "hpc/big", "v1",
                                [{"blob": data, "media_type":
                                  "application/vnd.oci.image.layer.v1.tar",
                                  "diff_id": sha(data)}])
        layer = img["layers"][0]["digest"]
        s = self.serve()
        self.assertEqual(s.get("/v2/%s/hpc/big/manifests/v1" % self.reg.hostport, ACCEPT)[0],
                         200)
        path = "/v2/%s/hpc/big/blobs/%s" % (self.reg.hostport, layer)
        self.assertEqual(sha(s.get(path)[2]), layer)  # now in the cache
        cached = os.path.join(self.cache, "blobs", "sha256", layer.split(":")[1])
        self.assertTrue(os.path.isfile(cached))
        c = s.conn()
        c.connect()
        # A small receive buffer: most of the blob is still in the file when prune runs.
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.request("GET", path)
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        head = r.read(65536)
        fpull.run(["cache", "prune", "--all"], env=self.env, check=0)
        self.assertFalse(os.path.exists(cached))
        rest = r.read()
        c.close()
        # The answer is sent from the descriptor opened before the prune: all of it.
        self.assertEqual((len(head) + len(rest), sha(head + rest)), (size, layer))
        # The next client gets it again, downloaded once more.
        st, _, body = s.get(path)
        self.assertEqual((st, sha(body)), (200, layer))
        self.assertEqual(upstream_gets(self.reg, layer), 2)

    def test_each_request_has_a_trace_line(self):
        img = images.push_image(self.client, "hpc/small", "v1", [images.random_layer("t")])
        layer = img["layers"][0]["digest"]
        s = self.serve()
        path = "/v2/%s/hpc/small/blobs/%s" % (self.reg.hostport, layer)
        self.assertEqual(s.get("/v2/%s/hpc/small/manifests/v1" % self.reg.hostport, ACCEPT)[0],
                         200)
        for _ in range(2):
            st, _, body = s.get(path)
            self.assertEqual(st, 200)
            # The second from the cache: once the download committed it.
            deadline = time.monotonic() + 10
            while "from %s/hpc/small is in the cache" % self.reg.hostport not in s.log():
                self.assertLess(time.monotonic(), deadline, s.log())
                time.sleep(0.05)
        # The line is written once the last byte went out: a moment after the client has it.
        deadline = time.monotonic() + 10
        while True:
            log = s.log()
            lines = [x for x in log.splitlines()
                     if x.startswith("serve: GET " + path + " -> 200")]
            if len(lines) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(len(lines), 2, log)
        self.assertIn("%d bytes from flight" % len(body), lines[0])
        self.assertIn("%d bytes from file" % len(body), lines[1])
        self.assertRegex(lines[1], r"answered in [0-9.]+ ms, done in [0-9.]+ ms")
        # A cached blob is hashed once, when it was written: later answers trust the record.
        self.assertIn("cache: blob %s trusted by its verified record, not hashed" % layer, log)

    def test_a_shared_cache_blob_is_hashed_once(self):
        # A site's shared cache (root's, filled by a pull): serve reads its blobs without
        # copying them into its own cache, hashes each once and then trusts its record (in
        # the own cache's verified-shared/), as for its own cache's blobs.
        img = images.push_image(self.client, "hpc/site", "v1", [images.random_layer("s")])
        layer = img["layers"][0]["digest"]
        site = os.path.join(self.tmp, "site")
        ref = "%s/hpc/site:v1" % self.reg.hostport
        fpull.run(["pull", "--cache-dir", site, "--progress", "none", ref,
                   os.path.join(self.tmp, "root")], check=0)
        self.assertEqual(upstream_gets(self.reg, layer), 1)
        s = self.serve(env={"FPULL_SHARED_CACHES": site})
        path = "/v2/%s/hpc/site/blobs/%s" % (self.reg.hostport, layer)
        trusted = "cache: blob %s trusted by its verified record, not hashed" % layer
        for n in range(2):
            st, _, body = s.get(path)
            self.assertEqual((st, sha(body)), (200, layer))
            self.assertEqual(s.log().count(trusted), n, s.log()[-3000:])
        self.assertEqual(upstream_gets(self.reg, layer), 1)  # the pull's: none from serve
        self.assertFalse(os.path.exists(os.path.join(self.cache, "blobs", "sha256",
                                                     layer.split(":")[1])))
        self.assertTrue(os.path.exists(os.path.join(
            self.cache, "tmp", "u%d" % os.geteuid(), "verified-shared", layer.split(":")[1])))


class Listen(ServeCase):
    def test_unix_socket(self):
        import http.client
        import socket
        path = os.path.join(self.tmp, "serve.sock")
        s = self.serve(listen="unix:" + path)
        self.assertEqual(s.hostport, "unix:" + path)

        class Conn(http.client.HTTPConnection):
            def connect(self):
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)

        c = Conn("localhost")
        c.request("GET", "/v2/")
        r = c.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"{}"))
        c.close()
        self.assertEqual(s.stop(), 0)
        self.assertFalse(os.path.exists(path))

    def test_address_in_use_and_bad_listen(self):
        s = self.serve()
        cp = fpull.run(["serve", "--listen", s.hostport], env=self.env, timeout=30)
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertIn("Address already in use", fpull.error_line(cp.stderr))
        for bad in ("nohost", "example.com:5000", "127.0.0.1:99999"):
            cp = fpull.run(["serve", "--listen", bad], env=self.env, timeout=30)
            self.assertEqual(cp.returncode, 2, (bad, cp.stderr))

    def test_print_config(self):
        cp = fpull.run(["serve", "--listen", "127.0.0.1:5123", "--print-config", "docker"],
                       check=0)
        self.assertEqual(json.loads(cp.stdout), {
            "registry-mirrors": ["http://127.0.0.1:5123"],
            "insecure-registries": ["127.0.0.1:5123"]})
        cp = fpull.run(["serve", "--print-config", "containerd", "docker.io", "ghcr.io"],
                       check=0)
        self.assertIn('# /etc/containerd/certs.d/docker.io/hosts.toml\n'
                      'server = "https://registry-1.docker.io"\n\n'
                      '[host."http://127.0.0.1:5050"]\n'
                      '  capabilities = ["pull", "resolve"]\n', cp.stdout)
        self.assertIn('certs.d/ghcr.io/hosts.toml\nserver = "https://ghcr.io"', cp.stdout)
        self.assertIn("config_path", cp.stdout)
        cp = fpull.run(["serve", "--print-config", "podman", "quay.io"], check=0)
        self.assertIn('[[registry]]\nprefix = "quay.io"\nlocation = "quay.io"\n\n'
                      '[[registry.mirror]]\nlocation = "127.0.0.1:5050/quay.io"\n'
                      'insecure = true\n', cp.stdout)
        cp = fpull.run(["serve", "--listen", "unix:/x", "--print-config", "docker"])
        self.assertEqual(cp.returncode, 2)
        cp = fpull.run(["serve", "--print-config", "rkt"])
        self.assertEqual(cp.returncode, 2)
