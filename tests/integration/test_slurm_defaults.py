"""Defaults a site can run (issue 41.3), on the one-node Slurm fixture: a node that cannot
load the plugin never runs an --fpull-image task on the host (the shipped line is
`required`); a registry that accepts connections and never answers costs a step whose
image is cached seconds, not the step (the registry check has a deadline by default), and
pull_timeout= never fails a cached image; a kept store is on by default."""
import os
import re
import shutil
import signal
import subprocess
import time

import faultproxy
import fpull
import images
import slurm
from test_slurm import (DATA_DIR, PLUGIN, SlurmCase, dev_overlay_prefix, os_release,
                        own_namespace_prefix, tools_layer)

PROGRAMS = ("fpull_spank.so", "fpull-slurm-runner", "fpull-slurm-hold")


class RequiredLine(SlurmCase):
    def test_a_node_that_cannot_load_the_plugin_runs_no_task_on_the_host(self):
        """The submit host loads the plugin (the option is known, the job is queued); the
        node no longer can (a library gone after an OS update: here the plugin's folder is
        emptied in slurmd's mount namespace once slurmd runs). With `required`, as
        shipped, the step fails and its task never runs on the bare node; with
        `optional` it ran there, exit 0."""
        self.require_plugin("runc")
        lib = os.path.join(self.tmp, "lib")
        os.mkdir(lib)
        for name in PROGRAMS:
            shutil.copy2(os.path.join(os.path.dirname(PLUGIN), name), lib)
        line = "required %s/fpull_spank.so run_dir=%s config=%s data_dir=%s fpull=%s\n" % (
            lib, self.run_dir, self.config, DATA_DIR, fpull.binary())
        images.push_image(self.client, "hpc/tools", "1.0", [tools_layer(), os_release("t")])
        ref = "%s/hpc/tools:1.0" % self.reg.hostport
        c = self.start_cluster(plugstack=line, slurmd_prefix=own_namespace_prefix("true"))
        cp = c._cmd(["srun", "--fpull-image=" + ref, "cat", "/etc/kind"], check=False,
                    user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "t\n"), cp.stderr + c.logs())
        subprocess.run(["nsenter", "-t", str(c.procs["slurmd"].pid), "-m", "--",
                        "mount", "-t", "tmpfs", "none", lib], check=True)
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "srun", "--fpull-image=" + ref,
                              "sh", "-c", "echo ran-on-the-host"], env=c.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            # The job waits for a node that can run it: this one was drained.
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            c._cmd(["scancel", "-u", "nobody"], check=False)
        self.assertNotIn("ran-on-the-host", out, err)
        log = c.log("slurmd.log")
        self.assertIn("Failed to load plugin %s/fpull_spank.so" % lib, log)
        self.assertRegex(c.node_state() + " " + err, r"drain|down|launch failed", log)


class HungRegistry(SlurmCase):
    """The image behind a fault proxy that can hang every request."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        self.img = images.push_image(self.client, "hpc/cached", "1.0",
                                     [tools_layer(), os_release("cached")])
        self.cref = "%s/hpc/cached:1.0" % self.proxy.hostport
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        shutil.chown(self.home, "nobody", None)

    def start(self, *extra):
        with open(self.config, "a") as f:
            f.write('insecure-registries: ["%s"]\n' % self.proxy.hostport)
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary()] + list(extra))

    def srun(self, *args):
        t0 = time.monotonic()
        cp = self.cluster._cmd(["env", "HOME=" + self.home, "srun"] + list(args),
                               check=False, user="nobody")
        return cp, time.monotonic() - t0

    def warning(self, stderr):
        warn = [ln for ln in stderr.splitlines() if "warning" in ln]
        self.assertEqual(len(warn), 1, stderr)
        return warn[0]

    def test_cached_image_runs_within_seconds_of_a_hung_registry(self):
        self.start()
        cp, _ = self.srun("--fpull-image=" + self.cref, "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "cached\n"), cp.stderr)
        self.proxy.add(r"", hang=600)
        cp, took = self.srun("--fpull-image=" + self.cref, "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "cached\n"), cp.stderr)
        self.assertLess(took, 10, cp.stderr)
        self.assertRegex(self.warning(cp.stderr),
                         r"^fpull: %s: warning: %s: the registry did not answer the job's "
                         r"submit within 4 seconds: running the cached %s \(\d+m\d\ds old\)$" % (
                             slurm.NODE, re.escape(self.cref), self.img["digest"]))
        # An image that is not cached still waits for the registry (and fails with it).
        cp, _ = self.srun("--fpull-image=%s/hpc/nope:1.0" % self.proxy.hostport,
                          "--fpull-pull=never", "true")
        self.assertEqual(cp.returncode, 5, cp.stderr)

    def test_pull_timeout_never_fails_a_cached_image(self):
        # The check answers, the new image's blobs trickle past pull_timeout=: the step
        # runs the cached image, with the warning, instead of failing with exit 6.
        self.start("pull_timeout=8", "check_timeout=30")
        cp, _ = self.srun("--fpull-image=" + self.cref, "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "cached\n"), cp.stderr)
        moved = images.push_image(self.client, "hpc/cached", "1.0",
                                  [tools_layer(), os_release("moved"),
                                   [{"path": "data", "data": os.urandom(1 << 20)}]])
        self.proxy.add(r"/blobs/" + moved["layers"][-1]["digest"], trickle=(1, 20))
        cp, took = self.srun("--fpull-image=" + self.cref, "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "cached\n"), cp.stderr)
        self.assertRegex(self.warning(cp.stderr),
                         r"^fpull: %s: warning: %s: the pull took longer than pull_timeout=8 "
                         r"seconds: running the cached %s \(\d+m\d\ds old\)$" % (
                             slurm.NODE, re.escape(self.cref), self.img["digest"]))


class DefaultStore(SlurmCase):
    """No store_max= on the line: each user's images are kept on the node."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc", "fuse-overlayfs")
        self.a = images.push_image(self.client, "hpc/a", "1.0", [tools_layer(), os_release("a")])
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        shutil.chown(self.home, "nobody", None)

    def start(self, fuse_mode):
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary()],
            slurmd_prefix=dev_overlay_prefix(self.tmp, "chmod %o /dev/fuse" % fuse_mode))

    def srun(self, *cmd):
        return self.cluster._cmd(["env", "HOME=" + self.home, "srun",
                                  "--fpull-image=%s/hpc/a:1.0" % self.reg.hostport] + list(cmd),
                                 check=False, user="nobody")

    def test_second_step_is_not_unpacked_again(self):
        self.start(0o666)
        for run in ("first", "kept"):
            cp = self.srun("cat", "/etc/kind")
            self.assertEqual((cp.returncode, cp.stdout), (0, "a\n"), run + ": " + cp.stderr)
        self.assertIn("is kept on this node: not unpacked again", cp.stderr)
        store = os.path.join(self.run_dir, "store", str(slurm.NOBODY))
        self.assertEqual(sorted(n for n in os.listdir(store) if "." not in n),
                         [self.a["digest"][7:]])

    def test_without_a_fuse_device_for_users_each_step_unpacks_without_a_word(self):
        self.start(0o600)
        for run in ("first", "second"):
            cp = self.srun("cat", "/etc/kind")
            self.assertEqual((cp.returncode, cp.stdout), (0, "a\n"), run + ": " + cp.stderr)
            self.assertNotIn("store_max", cp.stderr)
            self.assertNotIn("is kept", cp.stderr)
        store = os.path.join(self.run_dir, "store", str(slurm.NOBODY))
        self.assertEqual(os.listdir(store) if os.path.isdir(store) else [], [])


if __name__ == "__main__":
    import unittest
    unittest.main()
