"""The base of the multi-node Slurm tests (test_slurm_nodes*.py): a cluster of N nodes
(tests/fixtures/slurm_nodes.py) with the plugin under test, the real docker-registry on the
cluster's bridge, and an image of the host's tools (test_slurm.tools_layer) whose
/etc/os-release names it."""
import os
import re
import shutil
import unittest

import fpull
import images
import slurm
import slurm_nodes
from test_slurm import DATA_DIR, PLUGIN, holders, os_release, tools_layer

N = 4  # nodes in the suite's tests (the bench runs 8)


class NodesCase(unittest.TestCase):
    nodes = N

    def setUp(self):
        slurm.require(self)
        if not os.path.isfile(PLUGIN):
            self.fail("%s was not built (is libslurm-dev installed?)" % PLUGIN)
        if not fpull.available():
            self.fail("fpull binary not built: %s" % fpull.binary())
        for tool in ("runc", "ip", "nsenter", "unshare"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed" % tool)
        self.cluster = slurm_nodes.Nodes(self.nodes, plugin=PLUGIN,
                                         plugin_args=self.plugin_args(),
                                         **self.cluster_kw())
        self.addCleanup(self.cluster.stop)
        self.cluster.start()
        self.reg = self.cluster.start_registry()
        self.client = images.Client(self.reg.url)
        self.write_config(self.config, "")
        self.ref = "%s/hpc/os:1.0" % self.reg.hostport
        self.image = images.push_image(
            self.client, "hpc/os", "1.0", [tools_layer(self.tools()), os_release("image-os")],
            config_extra={"config": {"Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/tmp"}})

    @property
    def config(self):
        """The fpull config every node's pull reads (config=)."""
        return self.cluster.path("fpull.yaml")

    def write_config(self, path, extra):
        """An fpull config naming the bridge's registry insecure, with EXTRA (YAML)."""
        with open(path, "w") as f:
            f.write('insecure-registries: ["%s"]\n%s' % (self.reg.hostport, extra))
        os.chmod(path, 0o644)

    def tools(self):
        return ("/bin/sh", "/usr/bin/cat", "/usr/bin/sleep", "/usr/bin/env", "/usr/bin/ls",
                "/usr/bin/id")

    def plugin_args(self):
        # @WORKDIR@: the cluster's directory (slurm_nodes.Nodes)
        return ["fpull=" + fpull.binary(), "data_dir=" + DATA_DIR,
                "config=@WORKDIR@/fpull.yaml"]

    def cluster_kw(self):
        return {}

    def srun(self, args, **kw):
        return self.cluster.run(["srun"] + list(args), **kw)

    def egress(self, reg=None):
        """{digest: [GETs, bytes served]} of the blobs in a registry's access log (reg:
        self.reg's unless given)."""
        return blob_egress((reg or self.reg).log_path)

    def assert_clean(self):
        """Every node idle, its run_dir empty (the epilog ran there) and no process rooted
        in it."""
        states = self.cluster.settled()
        self.assertEqual(states, {n: "idle" for n in self.cluster.names}, self.cluster.logs())
        for name in self.cluster.names:
            run = self.cluster.node_path(name, "run", "fpull-slurm")
            left = [e for e in (os.listdir(run) if os.path.isdir(run) else [])
                    if e not in ("store",)]
            self.assertEqual(left, [], "%s: %s" % (name, run))
            self.assertEqual(holders(run), [], name)
            self.assertEqual(holders(self.cluster.node_run_dir), [], name)


def blob_egress(log_path):
    """{digest: [GETs, bytes served]} of the blob GETs answered 200 in a docker-registry
    access log."""
    out = {}
    with open(log_path, errors="replace") as f:
        for line in f:
            m = re.search(r'"GET /v2/[^ ]+/blobs/(sha256:[0-9a-f]{64}) HTTP/[0-9.]+" 200 '
                          r'(\d+)', line)
            if m:
                rec = out.setdefault(m.group(1), [0, 0])
                rec[0] += 1
                rec[1] += int(m.group(2))
    return out


def image_blobs(img):
    """{digest: size} of a pushed image's config and layers (images.push_image's)."""
    out = {img["config_digest"]: len(img["config"])}
    for layer in img["layers"]:
        out[layer["digest"]] = layer["size"]
    return out
