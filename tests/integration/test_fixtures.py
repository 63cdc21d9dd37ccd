"""The test fixtures themselves, against the real registry: if they lie, every
integration test lies with them."""
import gzip
import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

import demo_index
import fpull
import images
import registry


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skopeo_raw(hostport, ref, extra=()):
    return subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false"] + list(extra) +
                          ["docker://%s/%s" % (hostport, ref)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


LAYER1 = [
    {"path": "etc", "type": "dir", "mode": 0o755},
    {"path": "etc/hostname", "data": "fixture\n", "mode": 0o640, "mtime": 1600000000},
    {"path": "etc/hosts-link", "type": "symlink", "target": "hostname"},
    {"path": "etc/hard", "type": "hardlink", "target": "etc/hostname"},
    {"path": "run/fifo", "type": "fifo", "mode": 0o600},
    {"path": "dev/null", "type": "chardev", "devmajor": 1, "devminor": 3},
    {"path": "bin/tool", "data": b"\x7fELF", "mode": 0o4755, "uid": 12, "gid": 34,
     "xattrs": {"user.fpull": "yes"}},
]
LAYER2 = [images.whiteout("etc/hostname"), images.opaque("run"),
          {"path": "run/new", "data": "n"}]


class RegistryFixture(unittest.TestCase):
    def test_registry_starts_answers_and_cleans_up(self):
        reg = registry.Registry()
        reg.start()
        try:
            self.assertTrue(reg.url.startswith("http://127.0.0.1:"))
            self.assertEqual(reg.hostport, "127.0.0.1:%d" % reg.port)
            st, h, body = images.Client(reg.url).get("/v2/")
            self.assertEqual(st, 200, body)
            self.assertEqual(h.get("Docker-Distribution-Api-Version"), "registry/2.0")
            cfg = reg.config()
            self.assertTrue(cfg["storage"]["delete"]["enabled"])
            self.assertEqual(cfg["http"]["addr"], reg.hostport)
            self.assertTrue(reg.storage_dir.startswith(reg.workdir))
            self.assertTrue(os.path.exists(reg.log_path))
            proc, workdir = reg.proc, reg.workdir
        finally:
            reg.stop()
        self.assertIsNotNone(proc.poll(), "registry still running after stop()")
        self.assertFalse(os.path.exists(workdir), "temp dir left behind")
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", reg.port), timeout=1).close()

    def test_registry_retries_when_port_taken(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = busy.getsockname()[1]
        ports = [taken]
        orig = registry.free_port

        def fake_free_port():
            return ports.pop(0) if ports else orig()

        registry.free_port = fake_free_port
        try:
            with registry.Registry() as reg:
                self.assertNotEqual(reg.port, taken)
                self.assertEqual(images.Client(reg.url).get("/v2/")[0], 200)
        finally:
            registry.free_port = orig
            busy.close()

    def test_registry_failure_raises_with_log_and_cleans_up(self):
        reg = registry.Registry(extra={"storage": {"filesystem": None,
                                                   "nosuchdriver": {}}})
        with self.assertRaises(registry.RegistryError) as cm:
            reg.start()
        self.assertIn("nosuchdriver", str(cm.exception))
        self.assertIsNone(reg.proc)
        self.assertIsNone(reg.workdir)

    def test_registry_extra_is_deep_merged_and_workdir_kept(self):
        with tempfile.TemporaryDirectory() as wd:
            with registry.Registry(extra={"http": {"headers": {"X-Fpull-Test": ["1"]}}},
                                   workdir=wd) as reg:
                st, h, _ = images.Client(reg.url).get("/v2/")
                self.assertEqual(h.get("X-Fpull-Test"), "1")
                self.assertEqual(reg.config()["http"]["addr"], reg.hostport)
            self.assertTrue(os.path.isdir(wd), "a caller's workdir must be kept")

    def test_basic_auth_push(self):
        with tempfile.TemporaryDirectory() as d:
            htpasswd = os.path.join(d, "htpasswd")
            out = subprocess.run(["htpasswd", "-Bbn", "alice", "s3cret"],
                                 stdout=subprocess.PIPE, check=True).stdout
            with open(htpasswd, "wb") as f:
                f.write(out)
            auth = {"htpasswd": {"realm": "fpull-test", "path": htpasswd}}
            with registry.Registry(auth=auth) as reg:
                anon = images.Client(reg.url)
                self.assertEqual(anon.get("/v2/")[0], 401)
                with self.assertRaises(images.RegistryHTTPError) as cm:
                    anon.put_blob("a/b", b"x")
                self.assertEqual(cm.exception.status, 401)
                wrong = images.Client(reg.url, "alice", "nope")
                self.assertEqual(wrong.get("/v2/")[0], 401)
                good = images.Client(reg.url, "alice", "s3cret")
                img = images.push_image(good, "a/b", "t", [LAYER1])
                st, h, body = good.get("/v2/a/b/manifests/t")
                self.assertEqual((st, sha(body)), (200, img["digest"]))

    def test_tls_registry(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "2", "-subj",
                            "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with registry.Registry(tls=(cert, key)) as reg:
                self.assertTrue(reg.url.startswith("https://127.0.0.1:"))
                c = images.Client(reg.url, cafile=cert)
                img = images.push_image(c, "t/ls", "v", [LAYER1])
                st, _, body = c.get("/v2/t/ls/manifests/v")
                self.assertEqual((st, sha(body)), (200, img["digest"]))


class ImageFixtures(unittest.TestCase):
    def setUp(self):
        self.reg = registry.Registry().start()
        self.addCleanup(self.reg.stop)
        self.client = images.Client(self.reg.url)

    def read_layer(self, repo, desc):
        st, _, blob = self.client.get("/v2/%s/blobs/%s" % (repo, desc["digest"]))
        self.assertEqual(st, 200)
        self.assertEqual(sha(blob), desc["digest"])
        self.assertEqual(len(blob), desc["size"])
        if desc["media_type"].endswith("gzip"):
            self.assertEqual(blob[:2], b"\x1f\x8b")
            raw = gzip.decompress(blob)
        elif desc["media_type"].endswith("zstd"):
            self.assertEqual(blob[:4], b"\x28\xb5\x2f\xfd")
            raw = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob,
                                 stdout=subprocess.PIPE, check=True).stdout
        else:
            raw = blob
        self.assertEqual(sha(raw), desc["diff_id"])
        return {m.name: m for m in tarfile.open(fileobj=io.BytesIO(raw))}, raw

    def check_image(self, repo, tag, fmt, compression):
        img = images.push_image(self.client, repo, tag, [LAYER1, LAYER2], fmt=fmt,
                                compression=compression, variant="v3")
        st, h, body = self.client.get("/v2/%s/manifests/%s" % (repo, tag))
        self.assertEqual(st, 200)
        self.assertEqual(body, img["manifest"])
        self.assertEqual(h["Docker-Content-Digest"], img["digest"])
        self.assertEqual(sha(body), img["digest"])
        self.assertEqual(h["Content-Type"], img["media_type"])
        m = json.loads(body)
        self.assertEqual(m["mediaType"], img["media_type"])
        self.assertEqual([(l["digest"], l["size"], l["mediaType"]) for l in m["layers"]],
                         [(l["digest"], l["size"], l["media_type"]) for l in img["layers"]])
        st, _, cfg = self.client.get("/v2/%s/blobs/%s" % (repo, img["config_digest"]))
        self.assertEqual((st, sha(cfg)), (200, img["config_digest"]))
        self.assertEqual(m["config"]["size"], len(cfg))
        config = json.loads(cfg)
        self.assertEqual((config["os"], config["architecture"], config["variant"]),
                         ("linux", "amd64", "v3"))
        self.assertEqual(config["rootfs"]["diff_ids"], [l["diff_id"] for l in img["layers"]])
        members, _ = self.read_layer(repo, img["layers"][0])
        self.assertEqual(sorted(members), sorted(
            ["etc", "etc/hostname", "etc/hosts-link", "etc/hard", "run/fifo", "dev/null",
             "bin/tool"]))
        self.assertTrue(members["etc"].isdir())
        host = members["etc/hostname"]
        self.assertEqual((host.mode, host.mtime, host.size), (0o640, 1600000000, 8))
        self.assertTrue(members["etc/hosts-link"].issym())
        self.assertEqual(members["etc/hosts-link"].linkname, "hostname")
        self.assertTrue(members["etc/hard"].islnk())
        self.assertEqual(members["etc/hard"].linkname, "etc/hostname")
        self.assertTrue(members["run/fifo"].isfifo())
        self.assertTrue(members["dev/null"].ischr())
        self.assertEqual((members["dev/null"].devmajor, members["dev/null"].devminor), (1, 3))
        tool = members["bin/tool"]
        self.assertEqual((tool.mode, tool.uid, tool.gid), (0o4755, 12, 34))
        self.assertEqual(tool.pax_headers.get("SCHILY.xattr.user.fpull"), "yes")
        members2, _ = self.read_layer(repo, img["layers"][1])
        self.assertEqual(sorted(members2), ["etc/.wh.hostname", "run/.wh..wh..opq", "run/new"])
        return img

    def test_push_oci_gzip(self):
        img = self.check_image("fx/oci", "gz", "oci", "gzip")
        self.assertEqual(img["media_type"], images.OCI_MANIFEST)
        self.assertEqual(img["layers"][0]["media_type"],
                         "application/vnd.oci.image.layer.v1.tar+gzip")

    def test_push_docker_mixed_compression(self):
        img = self.check_image("fx/docker", "mixed", "docker", ["zstd", None])
        self.assertEqual(img["media_type"], images.DOCKER_MANIFEST)
        self.assertEqual([l["media_type"] for l in img["layers"]],
                         ["application/vnd.docker.image.rootfs.diff.tar.zstd",
                          "application/vnd.docker.image.rootfs.diff.tar"])

    def test_skopeo_reads_same_bytes(self):
        img = images.push_image(self.client, "fx/sk", "v1", [LAYER1], fmt="docker")
        cp = skopeo_raw(self.reg.hostport, "fx/sk:v1")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout, img["manifest"])

    def check_index(self, fmt):
        repo = "fx/idx-" + fmt
        amd = images.push_image(self.client, repo, None, [LAYER1], fmt=fmt)
        arm = images.push_image(self.client, repo, None, [LAYER2], fmt=fmt,
                                architecture="arm64", variant="v8")
        plat_amd = {"os": "linux", "architecture": "amd64",
                    "features": ["broadwell", "nvidia-396-44"]}
        plat_arm = {"os": "linux", "architecture": "arm64", "variant": "v8"}
        idx = images.push_index(self.client, repo, "multi", [(amd, plat_amd),
                                                            (arm, plat_arm)], fmt=fmt)
        st, h, body = self.client.get("/v2/%s/manifests/multi" % repo)
        self.assertEqual(st, 200)
        self.assertEqual(body, idx["body"])
        self.assertEqual(h["Docker-Content-Digest"], idx["digest"])
        self.assertEqual(h["Content-Type"], idx["media_type"])
        doc = json.loads(body)
        self.assertEqual([e["platform"] for e in doc["manifests"]], [plat_amd, plat_arm])
        self.assertEqual([e["digest"] for e in doc["manifests"]], [amd["digest"], arm["digest"]])
        st, _, by_digest = self.client.get("/v2/%s/manifests/%s" % (repo, amd["digest"]))
        self.assertEqual((st, by_digest), (200, amd["manifest"]))
        cp = skopeo_raw(self.reg.hostport, repo + ":multi")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout, idx["body"])
        return idx

    def test_oci_index_keeps_features(self):
        self.assertEqual(self.check_index("oci")["media_type"], images.OCI_INDEX)

    def test_docker_list_keeps_features(self):
        self.assertEqual(self.check_index("docker")["media_type"], images.DOCKER_LIST)

    def test_unknown_tag_is_404(self):
        images.push_image(self.client, "fx/x", "v1", [LAYER1])
        self.assertEqual(self.client.get("/v2/fx/x/manifests/nope")[0], 404)
        self.assertEqual(self.client.get("/v2/fx/none/manifests/v1")[0], 404)

    def test_blob_path_points_at_stored_data(self):
        img = images.push_image(self.client, "fx/blob", "v1", [LAYER1])
        d = img["layers"][0]["digest"]
        with open(self.reg.blob_path(d), "rb") as f:
            self.assertEqual(sha(f.read()), d)

    def test_demo_index(self):
        demo = demo_index.build_demo(self.client)
        self.assertEqual(len(demo["entries"]), 11)
        st, h, body = self.client.get("/v2/qnib/cv-tf/manifests/1.12.0-rev9")
        self.assertEqual((st, h["Docker-Content-Digest"]), (200, demo["index_digest"]))
        doc = json.loads(body)
        self.assertEqual(doc["mediaType"], images.OCI_INDEX)
        self.assertEqual(len(doc["manifests"]), 11)
        seen = set()
        for (name, digest, features), desc, row in zip(demo["entries"], doc["manifests"],
                                                       demo_index.DEMO_ROWS):
            self.assertEqual((name, features), row)
            self.assertEqual(desc["digest"], digest)
            self.assertEqual(desc["platform"].get("features", []), features)
            self.assertEqual((desc["platform"]["os"], desc["platform"]["architecture"]),
                             ("linux", "amd64"))
            st, h, m = self.client.get("/v2/qnib/cv-tf/manifests/" + demo_index.row_tag(name))
            self.assertEqual((st, h["Docker-Content-Digest"]), (200, digest))
            layer = json.loads(m)["layers"][0]
            st, _, blob = self.client.get("/v2/qnib/cv-tf/blobs/" + layer["digest"])
            members = tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob)))
            content = members.extractfile("etc/fpull-demo").read().decode()
            self.assertEqual(content, demo_index.demo_file(name, features))
            seen.add(digest)
        self.assertEqual(len(seen), 11, "demo entries must be distinct images")
        last = doc["manifests"][-1]["platform"]["features"]
        self.assertEqual(last, ["broadwell", "nv-compute-5-2", "nvidia-396-44"])


class DemoServe(unittest.TestCase):
    def test_serve_mode_used_by_scripts_demo(self):
        with tempfile.TemporaryDirectory() as d:
            info = os.path.join(d, "info.json")
            proc = subprocess.Popen([sys.executable, demo_index.__file__, "--serve",
                                     "--info", info, "--timeout", "120"])
            try:
                deadline = time.monotonic() + 60
                while not os.path.exists(info) and time.monotonic() < deadline:
                    self.assertIsNone(proc.poll(), "demo_index --serve exited early")
                    time.sleep(0.1)
                with open(info) as f:
                    doc = json.load(f)
                self.assertEqual(doc["reference"], doc["registry"] + "/qnib/cv-tf:1.12.0-rev9")
                self.assertEqual([e["name"] for e in doc["entries"]],
                                 [r[0] for r in demo_index.DEMO_ROWS])
                client = images.Client("http://" + doc["registry"])
                st, h, _ = client.get("/v2/qnib/cv-tf/manifests/1.12.0-rev9")
                self.assertEqual((st, h["Docker-Content-Digest"]), (200, doc["index_digest"]))
                self.assertTrue(os.path.isdir(doc["workdir"]))
            finally:
                proc.terminate()
                rc = proc.wait(timeout=30)
            self.assertEqual(rc, 0)
            host, port = doc["registry"].rsplit(":", 1)
            with self.assertRaises(OSError):
                socket.create_connection((host, int(port)), timeout=1).close()
            self.assertFalse(os.path.exists(doc["workdir"]), "the registry's temp dir was kept")


class LayerHelpers(unittest.TestCase):
    def test_raw_names_are_kept_and_others_normalised(self):
        raw = images.tar_layer([
            {"path": "../escape", "data": "x", "raw_name": True},
            {"path": "/abs/file", "data": "y", "raw_name": True},
            {"path": "/norm/./a/../b", "data": "z"},
            {"path": "evil", "type": "symlink", "target": "/etc"},
            {"path": "h", "type": "hardlink", "target": "../../x", "raw_name": True},
            {"path": "d" * 200 + "/long", "data": "l"},
        ])
        names = [m.name for m in tarfile.open(fileobj=io.BytesIO(raw))]
        self.assertEqual(names, ["../escape", "/abs/file", "norm/b", "evil", "h",
                                 "d" * 200 + "/long"])
        t = tarfile.open(fileobj=io.BytesIO(raw))
        self.assertEqual(t.getmember("evil").linkname, "/etc")
        self.assertEqual(t.getmember("h").linkname, "../../x")

    def test_layers_are_deterministic(self):
        self.assertEqual(images.tar_layer(LAYER1), images.tar_layer(LAYER1))
        self.assertEqual(images.compress(images.tar_layer(LAYER1), "gzip"),
                         images.compress(images.tar_layer(LAYER1), "gzip"))

    def test_compress_round_trips(self):
        data = images.tar_layer(LAYER1)
        self.assertEqual(images.compress(data, None), data)
        self.assertEqual(gzip.decompress(images.compress(data, "gzip")), data)
        z = images.compress(data, "zstd")
        self.assertEqual(z[:4], b"\x28\xb5\x2f\xfd")
        out = subprocess.run(["zstd", "-d", "-c", "-q"], input=z, stdout=subprocess.PIPE,
                             check=True).stdout
        self.assertEqual(out, data)
        with self.assertRaises(ValueError):
            images.compress(data, "lz4")

    def test_challenge_parser(self):
        kind, p = images._parse_challenge(
            'Bearer realm="http://127.0.0.1:1/token",service="reg, x",scope="repository:a/b:pull"')
        self.assertEqual(kind, "bearer")
        self.assertEqual(p, {"realm": "http://127.0.0.1:1/token", "service": "reg, x",
                             "scope": "repository:a/b:pull"})
        self.assertEqual(images._parse_challenge('Basic realm="r"'), ("basic", {"realm": "r"}))


class FpullRunner(unittest.TestCase):
    def test_private_environment_and_check(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "fake-fpull")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nenv\necho \"args:$*\" >&2\nexit 3\n")
            os.chmod(fake, 0o755)
            os.environ["FPULL_BIN"], old = fake, os.environ.get("FPULL_BIN")
            try:
                cp = fpull.run(["pull", "a"], env={"EXTRA": "1", "DOCKER_CONFIG": None})
                envs = dict(ln.split("=", 1) for ln in cp.stdout.splitlines() if "=" in ln)
                self.assertEqual(cp.returncode, 3)
                self.assertEqual(cp.stderr, "args:pull a\n")
                priv = fpull.private_dir()
                self.assertEqual(envs["HOME"], os.path.join(priv, "home"))
                self.assertTrue(envs["XDG_CACHE_HOME"].startswith(priv))
                self.assertEqual(envs["FPULL_CACHE"], fpull.cache_dir())
                self.assertFalse(os.path.exists(envs["FPULL_CONFIG"]))
                self.assertEqual(envs["EXTRA"], "1")
                self.assertNotIn("DOCKER_CONFIG", envs)
                self.assertTrue(stat.S_ISDIR(os.stat(envs["HOME"]).st_mode))
                with self.assertRaises(AssertionError) as cm:
                    fpull.run(["x"], check=0)
                self.assertIn("exit 3, expected 0", str(cm.exception))
            finally:
                if old is None:
                    del os.environ["FPULL_BIN"]
                else:
                    os.environ["FPULL_BIN"] = old

    def test_error_line(self):
        self.assertEqual(fpull.error_line("fpull: warning: w\nfpull: x: not found\n"),
                         "fpull: x: not found")
        for bad in ("", "fpull: a\nfpull: b\n", "fpull: a\nmore\n", "error\n"):
            with self.assertRaises(AssertionError):
                fpull.error_line(bad)


if __name__ == "__main__":
    unittest.main()
