"""fpull serve against bad input: path traversal, oversized headers and names, bogus
digests, other methods, a client that goes away mid-blob, 200 clients at once. Each is a 4xx
or a closed connection, never a crash, a stuck worker or a partial blob in the cache."""
import concurrent.futures
import hashlib
import json
import os
import socket
import time

import faultproxy
import images
from test_serve import ACCEPT, ServeCase, sha


def raw(s, data, timeout=3):
    """Sends bytes as they are; returns what came back until the server closed or went
    quiet (b"" for a connection closed without an answer)."""
    host, port = s.hostport.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as c:
        try:
            c.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                out += b
                if b"\r\n\r\n" in out and b"Content-Length: " in out:
                    head, _, body = out.partition(b"\r\n\r\n")
                    n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                    if len(body) >= n:
                        break
        except (ConnectionResetError, socket.timeout):
            pass
        return out


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


class BadInput(ServeCase):
    def assert_blobs_verified(self):
        """Every file in the cache's blobs/ is complete: its name is its sha256."""
        d = os.path.join(self.cache, "blobs", "sha256")
        for name in os.listdir(d) if os.path.isdir(d) else []:
            with open(os.path.join(d, name), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), name)

    def test_traversal_and_bogus_names_and_digests(self):
        s = self.serve()
        bad = [
            "/v2/../../etc/passwd",
            "/v2/a/../../b/manifests/latest",
            "/v2/%2e%2e/%2e%2e/manifests/latest",
            "/v2/x/manifests/..%2f..%2fetc",
            "/v2/x/blobs/sha256:../../../../etc/passwd",
            "/v2/x/blobs/sha256:" + "g" * 64,
            "/v2/x/blobs/md5:d41d8cd98f00b204e9800998ecf8427e",
            "/v2/x/manifests/sha256:abc",
            "/v2/UPPER/manifests/latest",
            "/v2/" + "a/" * 600 + "manifests/latest",
            "/v2/x/manifests/latest?ns=../../etc",
            "/v2/x/manifests/latest?ns=a%2fb",
            "/etc/passwd",
            "/v2/x/tags/list",
        ]
        for path in bad:
            st, h, body = s.get(path)
            self.assertTrue(400 <= st < 500, (path, st, body))
            self.assertIn("errors", json.loads(body), path)
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            st, h, body = s.request(method, "/v2/x/blobs/uploads/")
            self.assertEqual(st, 405, method)
            self.assertEqual(json.loads(body)["errors"][0]["code"], "UNSUPPORTED")
        self.assertTrue(s.alive())
        self.assertFalse(os.path.exists(os.path.join(self.cache, "etc")))

    def test_oversized_headers_and_garbage(self):
        s = self.serve()
        answers = [
            raw(s, b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"),
            raw(s, b"GET /v2/" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
            raw(s, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(200)),
            raw(s, b"GET /v2/ HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
            raw(s, b"GET /v2/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"zzzz\r\n"),
            raw(s, b"\r\n" * 1000),
        ]
        for a in answers:
            st = status_of(a)
            # An answer is a 4xx (or the complete request's 200), else the connection closed.
            self.assertTrue(st is None or 400 <= st < 500 or st == 200, a[:200])
        self.assertIn(status_of(answers[0]), (None, 413, 414, 431, 400))
        self.assertTrue(s.alive())
        self.assertEqual(s.get("/v2/")[0], 200)

    def test_client_gone_mid_blob_and_the_blob_still_completes(self):
        data = os.urandom(2 * 1024 * 1024)
        img = images.push_image(self.client, "hpc/big", "v1", [
            {"blob": data, "media_type": "application/vnd.oci.image.layer.v1.tar",
             "diff_id": sha(data)}])
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(65536, 0.05))
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write('insecure-registries: ["%s"]\n' % proxy.hostport)
        s = self.serve("--config", cfg)
        self.assertEqual(s.get("/v2/%s/hpc/big/manifests/v1" % proxy.hostport, ACCEPT)[0], 200)
        layer = img["layers"][0]["digest"]
        path = "/v2/%s/hpc/big/blobs/%s" % (proxy.hostport, layer)
        for _ in range(3):
            c = s.conn()
            c.request("GET", path)
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            r.read(10000)
            c.sock.shutdown(socket.SHUT_RDWR)
            c.close()
            self.assert_blobs_verified()
        cached = os.path.join(self.cache, "blobs", "sha256", layer.split(":")[1])
        deadline = time.monotonic() + 30
        while not os.path.exists(cached) and time.monotonic() < deadline:
            self.assert_blobs_verified()
            time.sleep(0.2)
        self.assertTrue(os.path.exists(cached), s.log())
        self.assert_blobs_verified()
        self.assertEqual(proxy.count(r"/blobs/" + layer), 1)
        st, _, body = s.get(path)
        self.assertEqual((st, sha(body)), (200, layer))
        self.assertTrue(s.alive())

    def test_two_hundred_clients_at_once(self):
        img = images.push_image(self.client, "hpc/app", "v1", [images.random_layer("a")])
        s = self.serve()
        path = "/v2/hpc/app/manifests/v1?ns=%s" % self.reg.hostport
        layer = img["layers"][0]["digest"]
        bpath = "/v2/hpc/app/blobs/%s?ns=%s" % (layer, self.reg.hostport)
        self.assertEqual(s.get(path, ACCEPT)[0], 200)

        def one(i):
            try:
                st, h, body = s.get(bpath if i % 2 else path, ACCEPT, timeout=120)
                return st, (sha(body) == layer) if i % 2 else h.get("docker-content-digest")
            except (ConnectionError, OSError) as e:
                return None, str(e)

        with concurrent.futures.ThreadPoolExecutor(200) as ex:
            results = list(ex.map(one, range(200)))
        ok = [r for r in results if r[0] == 200]
        self.assertEqual(len(ok), 200, [r for r in results if r[0] != 200][:5])
        for i, (st, what) in enumerate(results):
            self.assertEqual(what, True if i % 2 else img["digest"])
        self.assertTrue(s.alive())
        self.assertEqual(s.get("/v2/")[0], 200)
        self.assertEqual(s.stop(), 0)
