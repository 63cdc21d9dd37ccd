"""A different build per node in one job, the mission's core: nodes of three kinds on the
multi-node fixture, each with its own fpull config (node-private config=, the way a site
sets a node's features: here platform-features with detect off, standing in for the
node's detection), and one index with an entry per kind."""
import json
import os
import re
import subprocess

import fpull
import images
import slurm
from nodes_case import NodesCase
from test_slurm import os_release, tools_layer

KINDS = {"node1": "x86-64-v2", "node2": "x86-64-v3", "node3": "x86-64-v4",
         "node4": "x86-64-v2"}


class NodeKinds(NodesCase):
    def plugin_args(self):
        # config= names a node-private file: each node reads its own.
        return [a for a in super().plugin_args() if not a.startswith("config=")] + [
            "config=@WORKDIR@/node/run/fpull.yaml", "shared_cache=@WORKDIR@/shared/fpull"]

    def cluster_kw(self):
        # The site's Slurm features say the same (for --constraint); fpull reads its own.
        return {"features": KINDS}

    def setUp(self):
        super().setUp()
        tools = tools_layer(self.tools())
        self.entries = {}
        for kind in sorted(set(KINDS.values())):
            self.entries[kind] = images.push_image(
                self.client, "hpc/app", None, [tools, os_release("build-" + kind)],
                config_extra={"config": {"Env": ["PATH=/usr/bin:/bin"]}})
        images.push_index(self.client, "hpc/app", "1.0", [
            (img, {"os": "linux", "architecture": "amd64", "features": [kind]})
            for kind, img in sorted(self.entries.items())])
        self.app = "%s/hpc/app:1.0" % self.reg.hostport
        for name, kind in KINDS.items():
            self.node_features(name, kind)
        # The login node's own (it prefetches for every kind).
        self.write_config(self.cluster.path("node", "run", "fpull.yaml"), "")
        site = os.path.join(self.cluster.shared, "fpull")
        os.mkdir(site)
        os.chmod(site, 0o755)  # root's: the plugin makes each DIR/UID (issue 39)
        self.mine = os.path.join(site, str(slurm.NOBODY))

    def node_features(self, name, features):
        self.write_config(self.cluster.node_path(name, "run", "fpull.yaml"),
                          "detect: false\nplatform-features: [%s]\n" % features)

    def run_kinds(self, extra=()):
        return self.srun(["-N4"] + list(extra) + [
            "--fpull-image=" + self.app, "sh", "-c",
            'echo "$SLURMD_NODENAME $(cat /etc/kind) $FPULL_IMAGE_DIGEST"'])

    def assert_each_its_own(self, cp):
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        got = sorted(line.split() for line in cp.stdout.splitlines())
        self.assertEqual(got, [[name, "build-" + KINDS[name], self.entries[KINDS[name]]["digest"]]
                               for name in sorted(KINDS)], cp.stderr)
        self.assertEqual(len({row[2] for row in got}), 3)
        # Each node's line names the entry it chose and the features it chose it for.
        for name, kind in KINDS.items():
            self.assertRegex(cp.stderr, r"(?m)^fpull: %s: %s: %s \(linux/amd64 [^)]*%s" % (
                name, re.escape(self.app), self.entries[kind]["digest"], kind))

    def test_one_job_runs_each_nodes_own_build(self):
        self.assert_each_its_own(self.run_kinds())
        # The job's --constraint picks nodes by the site's Slurm features; each still runs
        # its own entry.
        cp = self.srun(["-N2", "--constraint=x86-64-v2", "--fpull-image=" + self.app, "sh",
                        "-c", 'echo "$SLURMD_NODENAME $(cat /etc/kind)"'])
        self.assertEqual((cp.returncode, sorted(cp.stdout.splitlines())),
                         (0, ["node1 build-x86-64-v2", "node4 build-x86-64-v2"]), cp.stderr)
        self.assert_clean()

    def test_a_typo_in_a_nodes_features_is_refused_not_matched(self):
        self.node_features("node3", "x86-64-v33")
        cp = self.run_kinds()
        self.assertEqual(cp.returncode, 2, cp.stdout + cp.stderr)
        self.assertIn('platform-features: unknown feature "x86-64-v33" (did you mean '
                      '"x86-64-v3"?)', cp.stderr)
        # node3 ran nothing in any entry; the node is not drained over it.
        self.assertFalse([ln for ln in cp.stdout.splitlines() if ln.startswith("node3 ")],
                         cp.stdout)
        self.assertNotIn("fpull: node3: %s: sha256:" % self.app, cp.stderr)
        self.assert_clean()

    def test_a_login_nodes_prefetch_all_serves_every_kind_with_pull_never(self):
        # Before any job of the user's made it: DIR/UID as an admin makes it (DIR is root's).
        os.mkdir(self.mine, 0o700)
        os.chown(self.mine, slurm.NOBODY, slurm.NOBODY)
        env = {"FPULL_CACHE": self.mine,
               "PATH": os.path.dirname(fpull.binary()) + ":" + os.environ["PATH"]}
        cp = self.cluster.run(["fpull", "prefetch", "-q", "--all", "--config",
                               self.cluster.path("node", "run", "fpull.yaml"), self.app],
                              env=env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        before = os.path.getsize(self.reg.log_path)
        self.assert_each_its_own(self.run_kinds(["--fpull-pull=never"]))
        with open(self.reg.log_path) as f:
            f.seek(before)
            self.assertNotIn("/v2/", f.read())
        self.assert_clean()

    def test_save_of_a_job_of_several_kinds_writes_one_file_per_entry(self):
        """Issue 41: --fpull-save in a step whose nodes choose different entries never gives
        one kind's build to another: each entry's file is PATH with its manifest's short
        digest before .sqsh, written once (node1 and node4 share one), recording its
        entry; a node that does not cover a file's entry refuses it (exit 3)."""
        out = os.path.join(self.cluster.shared, "saved")
        os.mkdir(out)
        os.chown(out, slurm.NOBODY, slurm.NOBODY)
        path = os.path.join(out, "app.sqsh")
        self.assert_each_its_own(self.run_kinds(["--fpull-save=" + path]))
        files = {kind: os.path.join(out, "app.%s.sqsh" % e["digest"].split(":")[1][:12])
                 for kind, e in self.entries.items()}
        self.assertEqual(sorted(f for f in os.listdir(out) if not f.startswith(".")),
                         sorted(os.path.basename(f) for f in files.values()))
        for kind, f in files.items():
            kind_text = subprocess.run(["unsquashfs", "-cat", f, "etc/kind"],
                                       stdout=subprocess.PIPE, text=True).stdout
            self.assertEqual(kind_text, "build-%s\n" % kind)
            rec = json.loads(subprocess.run(["unsquashfs", "-cat", f, ".fpull/platform.json"],
                                            stdout=subprocess.PIPE, text=True).stdout)
            self.assertEqual((rec["manifest"], rec["platform"]["features"]),
                             (self.entries[kind]["digest"], [kind]))
            self.assertIn("index", rec)
        # The x86-64-v4 build on an x86-64-v2 node: refused, as a pull would refuse it.
        cp = self.srun(["-w", "node1", "--fpull-image=" + files["x86-64-v4"], "cat",
                        "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (3, ""), cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^fpull: node1: %s: made from the entry linux/amd64 "
                         r"x86-64-v4, manifest sha256:[0-9a-f]{12}, which this node does not "
                         r"cover: lacks x86-64-v4 \(exit 3\)$" % re.escape(files["x86-64-v4"]))
        # Its own kind's file runs there.
        cp = self.srun(["-w", "node1", "--fpull-image=" + files["x86-64-v2"], "cat",
                        "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "build-x86-64-v2\n"), cp.stderr)
        self.assert_clean()
