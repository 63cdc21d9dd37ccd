"""One image's egress per job: the site's shared cache (shared_cache=, one directory bound
into every node standing in for a parallel file system) and a pull-through mirror (the
real docker-registry in proxy mode) on the multi-node fixture; the registry's access log
says what it served."""
import base64
import hashlib
import json
import os
import re
import shutil
import time

import fpull
import images
import slurm
import tokenserver
from nodes_case import NodesCase, blob_egress, image_blobs

BIG = 8  # the 8-node job


class SharedCache(NodesCase):
    """shared_cache=DIR: each user's pulls on every node keep their cache in DIR/UID."""

    nodes = BIG

    def plugin_args(self):
        return super().plugin_args() + ["shared_cache=@WORKDIR@/shared/fpull"]

    def setUp(self):
        super().setUp()
        self.site = os.path.join(self.cluster.shared, "fpull")
        os.mkdir(self.site)
        os.chmod(self.site, 0o755)  # root's: the plugin makes each DIR/UID (issue 39)
        self.mine = os.path.join(self.site, str(slurm.NOBODY))

    def assert_blobs_whole(self, cache):
        """Every blob in CACHE has the digest it is named by, and nothing is left
        half-written."""
        d = os.path.join(cache, "blobs", "sha256")
        names = os.listdir(d)
        self.assertTrue(names)
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), name)
        tmp = os.path.join(cache, "tmp")
        partial = [os.path.join(r, f) for r, _, fs in os.walk(tmp) for f in fs
                   if not os.path.join(r, f).split(os.sep)[-2] == "verified"]
        self.assertEqual(partial, [])

    def test_eight_cold_nodes_at_once_fetch_each_blob_once(self):
        cp = self.srun(["-N%d" % BIG, "--fpull-image=" + self.ref, "cat", "/etc/kind"])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        self.assertEqual(cp.stdout, "image-os\n" * BIG, cp.stderr)
        want = image_blobs(self.image)
        got = self.egress()
        self.assertEqual({d: n for d, (n, _) in got.items()}, {d: 1 for d in want}, cp.stderr)
        served = sum(b for _, b in got.values())
        self.assertEqual(served, sum(want.values()))
        # The cache is the user's own, in the site's directory, with whole blobs only.
        st = os.stat(self.mine)
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (slurm.NOBODY, 0o700))
        self.assert_blobs_whole(self.mine)
        self.assertEqual(sorted(os.listdir(os.path.join(self.mine, "blobs", "sha256"))),
                         sorted(d.split(":")[1] for d in list(want) + [self.image["digest"]]))
        # Warm: the registry serves no blob at all.
        cp = self.srun(["-N%d" % BIG, "--fpull-image=" + self.ref, "cat", "/etc/kind"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(self.egress(), got)
        self.assert_clean()

    def test_the_jobs_fpull_cache_wins_over_the_sites(self):
        own = os.path.join(self.cluster.shared, "own")
        os.mkdir(own, 0o700)
        shutil.chown(own, "nobody", None)
        cp = self.srun(["-N2", "--fpull-image=" + self.ref, "cat", "/etc/kind"],
                       env={"FPULL_CACHE": own})
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-os\n" * 2),
                         cp.stderr + self.cluster.logs())
        self.assert_blobs_whole(own)
        self.assertFalse(os.path.exists(self.mine))
        self.assertEqual({n for n, _ in self.egress().values()}, {1})
        self.assert_clean()


class MirrorConfig:
    """An image of the mirror tests' own, and a config naming the mirror (written whole)."""

    def image_layers(self):
        from test_slurm import os_release, tools_layer
        return [tools_layer(self.tools()), os_release("image-mirrored")]

    def write_config(self, path, extra):
        if "registry-mirrors" not in extra:
            return super().write_config(path, extra)
        with open(path, "w") as f:
            f.write(extra)
        os.chmod(path, 0o644)


class PullThroughMirror(MirrorConfig, NodesCase):
    """A pull-through mirror (docker-registry in proxy mode, the upstream's credentials in
    its own configuration) named in registry-mirrors: nodes with caches of their own and
    no credentials each fetch from the mirror, and the upstream serves each blob once."""

    nodes = BIG

    def setUp(self):
        super().setUp()
        # The upstream wants credentials (token auth, as Docker Hub's); only the mirror's
        # configuration has them.
        ts = tokenserver.TokenServer(users={"mirror": "m1rror-Secret"},
                                     host=self.cluster.bridge_ip).start()
        self.addCleanup(ts.stop)
        self.upstream = self.cluster.start_registry(auth=ts.registry_auth())
        up = images.Client(self.upstream.url, username="mirror", password="m1rror-Secret")
        self.up_image = images.push_image(
            up, "hpc/os", "1.0", [images.random_layer("a", 200000),
                                  images.random_layer("b", 100000)] + self.image_layers())
        self.mirror = self.cluster.start_registry(proxy={
            "remoteurl": self.upstream.url, "username": "mirror", "password": "m1rror-Secret"})
        self.up_ref = "%s/hpc/os:1.0" % self.upstream.hostport
        self.write_config(self.config, 'registry-mirrors:\n  "%s": ["http://%s"]\n'
                          'insecure-registries: ["%s", "%s"]\n' % (
                              self.upstream.hostport, self.mirror.hostport,
                              self.upstream.hostport, self.mirror.hostport))

    def test_an_eight_node_job_costs_the_upstream_nothing_once_the_mirror_has_it(self):
        """docker-registry's proxy passes every request for a blob it is still fetching on to
        the upstream (distribution 2.8: each in-flight request is served from the upstream),
        so 8 nodes asking at the same moment cost the upstream up to 8 fetches of a blob;
        once the mirror has it, none. One pull first (a login node's prefetch through the
        mirror) makes a job of any size cost the upstream nothing more. The proxy asks the
        upstream twice for a blob it does not have: once for what it serves, once for what
        it stores, in the background."""
        cp = self.cluster.run(["fpull", "prefetch", "-q", "--config", self.config,
                               self.up_ref], env={"PATH": os.path.dirname(fpull.binary()) +
                                                  ":" + os.environ["PATH"],
                                                  "FPULL_CACHE": self.cluster.path("shared", "login")})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        want = image_blobs(self.up_image)
        # The proxy stores what it served with a fetch of its own, in the background.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                not all(os.path.exists(self.mirror.blob_path(d)) for d in want):
            time.sleep(0.1)
        up = blob_egress(self.upstream.log_path)
        self.assertEqual(set(up), set(want))
        self.assertTrue(all(n <= 2 for n, _ in up.values()), up)
        # Node-local caches: each node's own HOME (WORKDIR/node/home is per node).
        cp = self.srun(["-N%d" % BIG, "--fpull-image=" + self.up_ref, "cat", "/etc/kind"],
                       env={"HOME": self.cluster.node_home})
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        self.assertEqual(cp.stdout, "image-mirrored\n" * BIG, cp.stderr)
        self.assertEqual(blob_egress(self.upstream.log_path), up)
        # Each node fetched every blob from the mirror (node-local caches).
        mirrored = blob_egress(self.mirror.log_path)
        self.assertEqual({d: n for d, (n, _) in mirrored.items()}, {d: BIG + 1 for d in want})
        for name in self.cluster.names:
            cache = self.cluster.node_path(name, "home", ".cache", "fpull", "blobs")
            self.assertTrue(os.path.isdir(cache), name)
        # The nodes have no credentials for the upstream: without the mirror, refused.
        with open(self.config, "w") as f:
            f.write('insecure-registries: ["%s"]\n' % self.upstream.hostport)
        cp = self.srun(["-N1", "--fpull-pull=always", "--fpull-image=" + self.up_ref, "true"],
                       env={"HOME": self.cluster.node_home})
        self.assertEqual(cp.returncode, 4, cp.stderr)
        self.assertIn("authentication refused by %s" % self.upstream.hostport, cp.stderr)
        self.assert_clean()



class OneImagePerCluster(MirrorConfig, NodesCase):
    """Issue 41 item 4, the cluster mirror as the way: what every user may pull goes through
    one mirror whose account reads the public repositories only, so a public image costs
    the upstream once for all users of the cluster; a private image is not the mirror's to
    read, so its user's pull falls back to the upstream with the user's own credentials,
    and a user without them is refused. The mirror never stores what it cannot read."""

    nodes = 2

    def setUp(self):
        super().setUp()
        ts = tokenserver.TokenServer(users={"mirror": "m1rror-Secret", "alice": "al1ce-Secret"},
                                     acl={"mirror": ["hpc/*"]},
                                     host=self.cluster.bridge_ip).start()
        self.addCleanup(ts.stop)
        self.upstream = self.cluster.start_registry(auth=ts.registry_auth())
        up = images.Client(self.upstream.url, username="mirror", password="m1rror-Secret")
        self.up_image = images.push_image(up, "hpc/os", "1.0", self.image_layers())
        mine = images.Client(self.upstream.url, username="alice", password="al1ce-Secret")
        self.secret = images.push_image(
            mine, "lab/secret", "1.0", [images.random_layer("s", 150000)] + self.image_layers())
        self.mirror = self.cluster.start_registry(proxy={
            "remoteurl": self.upstream.url, "username": "mirror", "password": "m1rror-Secret"})
        self.up_ref = "%s/hpc/os:1.0" % self.upstream.hostport
        self.secret_ref = "%s/lab/secret:1.0" % self.upstream.hostport
        self.write_config(self.config, 'registry-mirrors:\n  "%s": ["http://%s"]\n'
                          'insecure-registries: ["%s", "%s"]\n' % (
                              self.upstream.hostport, self.mirror.hostport,
                              self.upstream.hostport, self.mirror.hostport))
        # Two users, each with a home of their own; nobody's holds alice's credentials.
        self.homes = {}
        for user in ("nobody", "daemon"):
            home = self.cluster.path("shared", "home-" + user)
            os.makedirs(os.path.join(home, ".docker"))
            if user == "nobody":
                auth = base64.b64encode(b"alice:al1ce-Secret").decode()
                with open(os.path.join(home, ".docker", "config.json"), "w") as f:
                    json.dump({"auths": {self.upstream.hostport: {"auth": auth}}}, f)
                os.chmod(os.path.join(home, ".docker", "config.json"), 0o600)
            for root, dirs, files in os.walk(home):
                for name in [root] + [os.path.join(root, x) for x in files]:
                    shutil.chown(name, user, None)
            self.homes[user] = home

    def run_as(self, user, image):
        return self.cluster.run(["srun", "-N2", "--fpull-image=" + image, "cat", "/etc/kind"],
                                user=user, env={"HOME": self.homes[user]})

    def test_a_public_image_costs_the_upstream_once_for_all_users_and_a_private_one_stays_private(self):
        cp = self.run_as("nobody", self.up_ref)
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-mirrored\n" * 2),
                         cp.stderr + self.cluster.logs())
        want = image_blobs(self.up_image)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                not all(os.path.exists(self.mirror.blob_path(d)) for d in want):
            time.sleep(0.1)
        first = blob_egress(self.upstream.log_path)
        self.assertEqual(set(first), set(want))
        # Another user, another cache: the mirror has it, the upstream serves nothing more.
        cp = self.run_as("daemon", self.up_ref)
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-mirrored\n" * 2),
                         cp.stderr + self.cluster.logs())
        self.assertEqual(blob_egress(self.upstream.log_path), first)
        self.assertTrue(os.path.isdir(os.path.join(self.homes["daemon"], ".cache", "fpull")))
        # The private image: the mirror's account cannot read it; its user's own
        # credentials fetch it from the upstream.
        cp = self.run_as("nobody", self.secret_ref)
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-mirrored\n" * 2),
                         cp.stderr + self.cluster.logs())
        secret_blobs = image_blobs(self.secret)
        self.assertTrue(set(secret_blobs) <= set(blob_egress(self.upstream.log_path)))
        # Another user without them is refused, and nothing of it was stored by the mirror
        # (where every user's pulls could read it).
        cp = self.run_as("daemon", self.secret_ref)
        self.assertEqual((cp.returncode, cp.stdout), (4, ""), cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^fpull: node\d: .*%s.*(authentication|denied|refused)"
                         % re.escape(self.secret_ref))
        only_secret = set(secret_blobs) - set(want)
        self.assertTrue(only_secret)
        self.assertFalse([d for d in only_secret if os.path.exists(self.mirror.blob_path(d))])
        self.assert_clean()
