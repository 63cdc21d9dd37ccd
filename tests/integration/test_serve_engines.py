"""Debian's containerd, dockerd and podman pull the demo index's generic name through
fpull serve and get this node's entry (the one fpull digest chooses here); with
--features x86-64-v2 the generic entry; by the index's digest they verify what they get; a
fresh engine still pulls with the registry stopped; 8 engines at once fetch each blob once.
Every engine runs with its own directories and sockets in a network namespace that has only
loopback, so nothing leaves the machine and nothing of it is changed."""
import concurrent.futures
import json
import os
import tempfile
import unittest
import urllib.request

import demo_index
import engines
import fpull
import images
import registry
from serve import Serve

TAG = "1.12.0-rev9"
GENERIC = "cv-tf-dev:1.12.0-rev11"


class EngineCase(unittest.TestCase):
    def setUp(self):
        why = engines.why_not_root()
        if why:
            self.skipTest(why)
        missing = engines.missing_binaries()
        if missing:
            self.fail("not installed (scripts/deps.sh's test set has them): %s" % missing)
        if not fpull.available():
            self.fail("fpull binary not built: %s" % fpull.binary())
        self.tmp = tempfile.mkdtemp(prefix="fpull-engines-")
        engines.private_machine(self.tmp)
        self.addCleanup(fpull.rmtree, self.tmp)
        self.reg = registry.Registry().start()
        self.addCleanup(self.reg.stop)
        self.client = images.Client(self.reg.url)
        self.demo = demo_index.build_demo(self.client)
        self.by_name = {n: d for n, d, _ in self.demo["entries"]}
        self.cache = os.path.join(self.tmp, "fpull-cache")
        self.ref = "%s/qnib/cv-tf:%s" % (self.reg.hostport, TAG)
        self.config = os.path.join(self.tmp, "fpull-config.yaml")
        with open(self.config, "w") as f:
            # docker asks a mirror for Docker Hub names only: fpull serve finds docker.io's
            # qnib/cv-tf in the test's registry.
            f.write('registry-mirrors:\n  docker.io: ["%s"]\ninsecure-registries: ["%s"]\n'
                    % (self.reg.url, self.reg.hostport))

    def serve(self, *args):
        s = Serve(["--config", self.config] + list(args), env={"FPULL_CACHE": self.cache},
                  workdir=self.tmp).start()
        self.addCleanup(s.stop)
        return s

    def node_entry(self, *args):
        """The entry fpull pull chooses on this node (with args)."""
        cp = fpull.run(["digest", "--config", self.config] + list(args) + [self.ref],
                       env={"FPULL_CACHE": os.path.join(self.tmp, "digest-cache")}, check=0)
        return cp.stdout.strip()

    def config_digest(self, manifest_digest):
        req = urllib.request.Request(
            "%s/v2/qnib/cv-tf/manifests/%s" % (self.reg.url, manifest_digest),
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        with urllib.request.urlopen(req) as r:
            return json.load(r)["config"]["digest"]

    def containerd(self, name="containerd"):
        c = engines.Containerd(os.path.join(self.tmp, name)).start()
        self.addCleanup(c.stop)
        return c

    def ctr_pull(self, c, s, ref=None):
        hosts = c.hosts_dir(self.reg.hostport, s.url, self.reg.url)
        c.ctr("images", "pull", "--hosts-dir", hosts, "--snapshotter", "native",
              ref or self.ref)

    def podman(self, s, name="podman"):
        # A mirror location is HOST:PORT/PATH, and PATH cannot hold a port: podman pulls
        # docker.io's name, which fpull serve's config finds in the test's registry.
        conf = ('unqualified-search-registries = []\n\n[[registry]]\nprefix = "docker.io"\n'
                'location = "docker.io"\n\n[[registry.mirror]]\nlocation = "%s/docker.io"\n'
                'insecure = true\n' % s.hostport)
        return engines.Podman(os.path.join(self.tmp, name), conf)

    def dockerd(self, s, c, name="dockerd"):
        d = engines.Dockerd(os.path.join(self.tmp, name), c, mirrors=[s.url],
                            insecure=[s.hostport]).start()
        self.addCleanup(d.stop)
        return d


class Containerd(EngineCase):
    def check(self, want, *serve_args):
        s = self.serve(*serve_args)
        c = self.containerd()
        self.ctr_pull(c, s)
        content = c.content_digests()
        self.assertIn(want, content, s.log())
        others = set(self.by_name.values()) - {want}
        self.assertEqual(content & others, set(), "another entry was fetched")
        # The image is the index fpull serve answered the tag with.
        st, h, _ = s.head("/v2/qnib/cv-tf/manifests/%s?ns=%s" % (TAG, self.reg.hostport),
                          {"Accept": "application/vnd.oci.image.index.v1+json"})
        self.assertEqual(c.image_target(self.ref), h["docker-content-digest"])
        self.assertIn("manifests/%s" % TAG, s.log())
        return s, c

    def test_ctr_pulls_this_nodes_entry(self):
        want = self.node_entry()
        self.assertIn(want, self.by_name.values())
        self.check(want)

    def test_ctr_pulls_the_generic_entry_with_x86_64_v2(self):
        self.check(self.by_name[GENERIC], "--features", "x86-64-v2")

    def test_ctr_by_index_digest_verifies(self):
        s = self.serve()
        c = self.containerd()
        ref = "%s/qnib/cv-tf@%s" % (self.reg.hostport, self.demo["index_digest"])
        self.ctr_pull(c, s, ref)
        # The upstream index, byte-identical: containerd's own choice (the first entry).
        self.assertIn(self.demo["index_digest"], c.content_digests())
        self.assertIn(self.by_name[GENERIC], c.content_digests())
        self.assertIn(self.demo["index_digest"], s.log())

    def test_ctr_with_the_registry_stopped(self):
        want = self.node_entry()
        s = self.serve()
        self.ctr_pull(self.containerd(), s)
        self.reg.stop()
        c2 = self.containerd("containerd2")
        self.ctr_pull(c2, s)
        self.assertIn(want, c2.content_digests())
        self.assertIn("answering from the cache", s.log())


HUB_REF = "docker.io/qnib/cv-tf:" + TAG


class Podman(EngineCase):
    def pull_id(self, p):
        p.run("pull", HUB_REF)
        _, out, _ = p.run("image", "inspect", "--format", "{{.Id}}", HUB_REF)
        return "sha256:" + out.strip()

    def test_podman_pulls_this_nodes_entry(self):
        want = self.node_entry()
        s = self.serve()
        self.assertEqual(self.pull_id(self.podman(s)), self.config_digest(want), s.log())

    def test_podman_pulls_the_generic_entry_with_x86_64_v2(self):
        s = self.serve("--features", "x86-64-v2")
        self.assertEqual(self.pull_id(self.podman(s)),
                         self.config_digest(self.by_name[GENERIC]))

    def test_podman_by_index_digest_verifies(self):
        s = self.serve()
        p = self.podman(s)
        p.run("pull", "docker.io/qnib/cv-tf@" + self.demo["index_digest"])
        self.assertIn(self.demo["index_digest"], s.log())

    def test_podman_with_the_registry_stopped(self):
        want = self.config_digest(self.node_entry())
        s = self.serve()
        self.pull_id(self.podman(s))
        self.reg.stop()
        self.assertEqual(self.pull_id(self.podman(s, "podman2")), want)

    def test_eight_engines_fetch_each_blob_once(self):
        want = self.node_entry()
        s = self.serve()
        ps = [self.podman(s, "podman%d" % i) for i in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            ids = list(ex.map(self.pull_id, ps))
        self.assertEqual(set(ids), {self.config_digest(want)})
        gets = self.reg.blob_gets()
        self.assertTrue(gets)
        self.assertEqual({d: n for d, n in gets.items() if n != 1}, {}, s.log())


class Docker(EngineCase):
    def docker_pull(self, *serve_args):
        s = self.serve(*serve_args)
        c = self.containerd()
        d = self.dockerd(s, c)
        d.docker("pull", "qnib/cv-tf:" + TAG)
        _, out, _ = d.docker("image", "inspect", "-f", "{{.Id}}", "qnib/cv-tf:" + TAG)
        return s, d, out.strip()

    def test_docker_pulls_this_nodes_entry(self):
        want = self.node_entry()
        s, d, image_id = self.docker_pull()
        self.assertEqual(image_id, self.config_digest(want), s.log())
        _, cid, _ = d.docker("create", "qnib/cv-tf:" + TAG, "x")
        _, tar, _ = d.docker("cp", cid.strip() + ":/etc/fpull-demo", "-")
        name = [n for n, dg in self.by_name.items() if dg == want][0]
        self.assertIn(name, tar)

    def test_docker_pulls_the_generic_entry_with_x86_64_v2(self):
        s, d, image_id = self.docker_pull("--features", "x86-64-v2")
        self.assertEqual(image_id, self.config_digest(self.by_name[GENERIC]))

    def test_docker_by_index_digest_verifies(self):
        s = self.serve()
        d = self.dockerd(s, self.containerd())
        d.docker("pull", "qnib/cv-tf@" + self.demo["index_digest"])
        self.assertIn(self.demo["index_digest"], s.log())

    def test_docker_with_the_registry_stopped(self):
        want = self.config_digest(self.node_entry())
        s, d, _ = self.docker_pull()
        self.reg.stop()
        d2 = self.dockerd(s, self.containerd("containerd2"), "dockerd2")
        d2.docker("pull", "qnib/cv-tf:" + TAG)
        _, out, _ = d2.docker("image", "inspect", "-f", "{{.Id}}", "qnib/cv-tf:" + TAG)
        self.assertEqual(out.strip(), want)
