"""The site's SquashFS store (issue 41 item 1, plugin argument sqsh_store=DIR): on the
multi-node fixture with nodes of three kinds (test_slurm_nodes_kinds), the first node that
needs an entry converts it once into DIR/UID/HEX.sqsh on the shared directory, every node
of that kind mounts that file (squashfuse, a layer of the step's own over it), and a node
never runs a file of another entry."""
import os
import re
import shutil
import subprocess

import slurm
import test_slurm_nodes_kinds as kinds
from nodes_case import image_blobs
from test_slurm_nodes import kill_group

KINDS = kinds.KINDS


class StoreCase(kinds.NodeKinds):
    def plugin_args(self):
        return super().plugin_args() + ["sqsh_store=@WORKDIR@/shared/sqsh"]

    def cluster_kw(self):
        return dict(super().cluster_kw(), fuse_open=True)

    def setUp(self):
        for tool in ("squashfuse", "fuse-overlayfs", "mksquashfs"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed" % tool)
        super().setUp()
        site = os.path.join(self.cluster.shared, "sqsh")
        os.mkdir(site)
        os.chmod(site, 0o755)  # root's: the plugin makes each DIR/UID
        self.store = os.path.join(site, str(slurm.NOBODY))

    def files(self):
        """{name: (inode, mtime)} of the .sqsh files in the user's store."""
        if not os.path.isdir(self.store):
            return {}
        out = {}
        for f in os.listdir(self.store):
            if f.endswith(".sqsh"):
                st = os.stat(os.path.join(self.store, f))
                out[f] = (st.st_ino, st.st_mtime_ns)
        return out

    def entry_file(self, kind):
        return "%s.sqsh" % self.entries[kind]["digest"].split(":")[1]

    def said(self, stderr, what):
        return sorted(re.findall(r"(?m)^fpull: (node\d): %s: (sha256:[0-9a-f]{64}) %s" % (
            re.escape(self.app), what), stderr))


class SquashfsStore(StoreCase):
    def test_a_cold_job_converts_each_kinds_entry_once_and_later_steps_mount_it(self):
        cp = self.run_kinds()
        self.assert_each_its_own(cp)
        # One file per entry, the user's own and no one else's.
        self.assertEqual(sorted(self.files()), sorted(self.entry_file(k) for k in self.entries),
                         cp.stderr)
        st = os.stat(self.store)
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (slurm.NOBODY, 0o700))
        # Each kind's entry converted by one node; node1 and node4 (both v2) share one.
        converted = self.said(cp.stderr, "converted into ")
        self.assertEqual(sorted(d for _, d in converted),
                         sorted(e["digest"] for e in self.entries.values()), cp.stderr)
        mounted = self.said(cp.stderr, r"from the SquashFS store \(")
        self.assertEqual([d for _, d in mounted], [self.entries["x86-64-v2"]["digest"]], cp.stderr)
        self.assertEqual(sorted(n for n, _ in converted + mounted), sorted(KINDS))
        # Each blob came from the registry once (the shared cache), none for a later step.
        egress = self.egress()
        blobs = {}
        for e in self.entries.values():
            blobs.update(image_blobs(e))
        self.assertTrue(all(egress.get(d, [0])[0] <= 1 for d in blobs), egress)
        before, files = dict(egress), self.files()
        cp = self.run_kinds()
        self.assert_each_its_own(cp)
        self.assertEqual(self.said(cp.stderr, "converted into "), [], cp.stderr)
        self.assertEqual(sorted(n for n, _ in self.said(cp.stderr, r"from the SquashFS store \(")),
                         sorted(KINDS), cp.stderr)
        # The same files, not written again; no blob fetched again.
        self.assertEqual(self.files(), files)
        self.assertEqual(self.egress(), before)
        # The step's writes went to its own layer, not into the shared file.
        cp = self.srun(["-w", "node2", "--fpull-image=" + self.app, "sh", "-c",
                        "echo scribble > /etc/kind && cat /etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "scribble\n"), cp.stderr)
        self.assertEqual(self.files(), files)
        cp = self.srun(["-w", "node2", "--fpull-image=" + self.app, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "build-x86-64-v3\n"), cp.stderr)
        self.assert_clean()

    def test_a_file_of_another_entry_is_never_run(self):
        self.assert_each_its_own(self.run_kinds())
        # The v4 build put under the v2 entry's name (a hand, or a bad copy): the v2 nodes
        # refuse it and run nothing; the v3 node runs its own.
        v2 = os.path.join(self.store, self.entry_file("x86-64-v2"))
        shutil.copyfile(os.path.join(self.store, self.entry_file("x86-64-v4")), v2)
        cp = self.run_kinds()
        self.assertEqual(cp.returncode, 1, cp.stdout + cp.stderr)
        ran = sorted(line.split()[0] for line in cp.stdout.splitlines())
        self.assertNotIn("node1", ran)
        self.assertNotIn("node4", ran)
        self.assertNotIn("build-x86-64-v4", [line.split()[1] for line in cp.stdout.splitlines()
                                             if line.startswith(("node1", "node4"))])
        for node in ("node1", "node4"):
            self.assertRegex(cp.stderr, r"(?m)^fpull: %s: %s: %s: it was made from %s, not from "
                             r"the entry %s this node chose: not run" % (
                                 node, re.escape(self.app), re.escape(v2),
                                 self.entries["x86-64-v4"]["digest"],
                                 self.entries["x86-64-v2"]["digest"]))
        # Removed as the message says, the next step converts it again.
        os.unlink(v2)
        self.assert_each_its_own(self.run_kinds())
        self.assertIn(self.entry_file("x86-64-v2"), self.files())
        self.assert_clean()

    def test_what_a_dead_converter_left_is_removed(self):
        os.mkdir(self.store, 0o700)
        os.chown(self.store, slurm.NOBODY, slurm.NOBODY)
        left = os.path.join(self.store, self.entry_file("x86-64-v3") + ".tmp.node9.4242")
        with open(left, "wb") as f:
            f.write(b"hsqs half a file")
        os.chown(left, slurm.NOBODY, slurm.NOBODY)
        self.assert_each_its_own(self.run_kinds())
        self.assertFalse(os.path.exists(left))
        self.assertEqual(sorted(os.listdir(self.store)),
                         sorted([self.entry_file(k) for k in self.entries] +
                                [self.entry_file(k)[:-5] + ".lock" for k in self.entries]))
        self.assert_clean()

    def test_a_store_directory_others_may_write_is_refused_and_the_step_runs_without(self):
        os.chmod(os.path.dirname(self.store), 0o777)
        cp = self.run_kinds()
        self.assert_each_its_own(cp)
        self.assertRegex(cp.stderr, r"(?m)^fpull: node\d: warning: sqsh_store %s: refused: it "
                         r"must be root's and writable by root only" % re.escape(
                             os.path.dirname(self.store)))
        self.assertFalse(os.path.exists(self.store))
        self.assert_clean()


class BoundedSquashfsStore(StoreCase):
    """sqsh_store_max=: a user's files beyond it go, least recently used first, never one
    that a step on any node holds."""

    def plugin_args(self):
        return super().plugin_args() + ["sqsh_store_max=1"]

    def on(self, node, *argv):
        return self.srun(["-w", node, "--fpull-image=" + self.app] + list(argv))

    def test_the_least_recently_used_files_go_never_one_in_use(self):
        cp = self.on("node2", "cat", "/etc/kind")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(sorted(self.files()), [self.entry_file("x86-64-v3")])
        # node2's step still runs: its file stays beside node3's new one.
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "srun", "-w", "node2", "-J", "holdv3",
                              "--fpull-image=" + self.app, "sh", "-c", "echo up; sleep 300"],
                             env=self.cluster.env(), stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.addCleanup(kill_group, p)
        self.assertEqual(p.stdout.readline(), "up\n")
        cp = self.on("node3", "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "build-x86-64-v4\n"), cp.stderr)
        self.assertEqual(sorted(self.files()),
                         sorted([self.entry_file("x86-64-v3"), self.entry_file("x86-64-v4")]))
        self.assertEqual(self.cluster.run(["scancel", "-n", "holdv3"], user="nobody").returncode,
                         0)
        p.wait(timeout=60)
        self.assertEqual(self.cluster.settled(), {n: "idle" for n in self.cluster.names})
        # No step holds v3 or v4 now: node1's v2 step leaves its own file only.
        cp = self.on("node1", "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "build-x86-64-v2\n"), cp.stderr)
        self.assertEqual(sorted(self.files()), [self.entry_file("x86-64-v2")])
        self.assert_clean()
