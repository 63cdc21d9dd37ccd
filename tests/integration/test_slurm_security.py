"""Security review 3 of the Slurm plugin, as an attacker with a job on the node (the
review's findings 3-6 on a real Slurm; findings 1 and 2, the epilog's unmount and removal,
are tests/slurmroot): root opens nothing the job's user names, the runner is a program of
its own, a step's pull is bounded, run_dir is refused where others could make it first;
and the tasks of a step share one user namespace (issue 30, item 1)."""
import errno
import os
import signal
import shutil
import subprocess
import threading
import time

import fpull
import images
import slurm
from test_slurm import (DATA_DIR, PLUGIN, SlurmCase, holders, job_dirs, os_release,
                        step_pulls, tools_layer)


class SlurmAttacker(SlurmCase):
    """A registry behind a fault proxy, so that a step's pull can be held while the job's
    user acts."""

    MAX_UNPACKED = 1 << 20

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.big_behind_proxy(2 << 20)
        args = ["run_dir=" + self.run_dir, "config=" + self.config, "data_dir=" + DATA_DIR,
                "fpull=" + fpull.binary()]
        if self._testMethodName == "test_max_unpacked_bounds_a_steps_pull":
            args.append("max_unpacked=%d" % self.MAX_UNPACKED)
        if self._testMethodName == "test_run_dir_under_a_directory_others_can_write":
            self.open_dir = os.path.join(self.tmp, "open")
            os.mkdir(self.open_dir)
            os.chmod(self.open_dir, 0o777)
            self.run_dir = os.path.join(self.open_dir, "run")
            args[0] = "run_dir=" + self.run_dir
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=args)

    def srun_bg(self, *args):
        # A session of its own: killing it kills srun too, not only runuser (an srun left
        # behind outlives the cluster, with its slurmstepd).
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "srun"] + list(args),
                             env=self.cluster.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.addCleanup(self.kill_bg, p)
        return p

    @staticmethod
    def kill_bg(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=60)

    def pull_process(self, timeout=60):
        """(pid, parent pid) of this cluster's step pull, once it runs."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for ln in step_pulls(self.run_dir):
                pid = int(ln.split()[0])
                with open("/proc/%d/stat" % pid) as f:
                    return pid, int(f.read().rsplit(")", 1)[1].split()[1])
            time.sleep(0.1)
        self.fail("no pull started: " + self.cluster.logs())

    def as_nobody(self, fn):
        """Runs fn in a child that is the job's user (nobody), as the attacker."""
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(slurm.NOBODY, slurm.NOBODY, slurm.NOBODY)
                os.setresuid(slurm.NOBODY, slurm.NOBODY, slurm.NOBODY)
                fn()
                os._exit(0)
            except BaseException as e:  # noqa: B902 - the child reports any failure
                print("attacker:", e)
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)

    def test_root_opens_nothing_the_info_file_names(self):
        # The review's finding 3: the step's info file is the user's; its holder record went
        # into root's open("/proc/%s/ns/user"). Here it names a FIFO of the user's.
        evil = os.path.join(self.tmp, "evil")
        os.makedirs(os.path.join(evil, "ns"))
        fifo = os.path.join(evil, "ns", "user")
        os.mkfifo(fifo, 0o666)
        for d in (evil, os.path.join(evil, "ns"), fifo):
            shutil.chown(d, "nobody", "nogroup")
        self.proxy.add(r"/blobs/", trickle=(4096, 0.2))
        p = self.srun_bg("--fpull-image=" + self.big, "echo", "ran")
        _, runner = self.pull_process()
        step_dirs = [os.path.join(self.run_dir, j, s) for j in os.listdir(self.run_dir)
                     if j.isdigit() for s in os.listdir(os.path.join(self.run_dir, j))
                     if s.isdigit()]
        self.assertEqual(len(step_dirs), 1, step_dirs)
        forged = b"D\0P../" + evil[1:].encode() + b"\0Q2\0"

        def plant():
            with open(os.path.join(step_dirs[0], "info"), "wb") as f:
                f.write(forged)
            os.kill(runner, 9)
        self.as_nobody(plant)
        opened = []

        def watch():
            # A reader on the FIFO (root, blocked in it) would let a writer open it.
            while p.poll() is None:
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                    opened.append(True)
                    os.close(fd)
                    return
                except OSError as e:
                    if e.errno != errno.ENXIO:
                        raise
                time.sleep(0.05)
        t = threading.Thread(target=watch)
        t.start()
        try:
            out, err = p.communicate(timeout=60)
        finally:
            t.join(timeout=5)
        self.assertEqual(opened, [], "the FIFO the user named was opened")
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("ran", out)
        self.assertRegex(err, r"fpull: %s: the step's container: no holder's pid in " %
                         slurm.NODE)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_runner_is_a_program_of_its_own(self):
        # The review's finding 4: the runner was a dumpable fork of slurmstepd, whose heap
        # the user could read through /proc/PID/mem.
        self.proxy.add(r"/blobs/", trickle=(4096, 0.2))
        p = self.srun_bg("--fpull-image=" + self.big, "echo", "ran")
        _, runner = self.pull_process()
        exe = os.readlink("/proc/%d/exe" % runner)
        self.assertEqual(os.path.basename(exe), "fpull-slurm-runner", exe)
        with open("/proc/%d/maps" % runner) as f:
            maps = f.read()
        self.assertNotIn("slurmstepd", maps)
        self.assertNotIn("libslurm", maps)
        with open("/proc/%d/status" % runner) as f:
            ids = [ln.split()[1:] for ln in f if ln.startswith(("Uid:", "Gid:"))]
        self.assertEqual(ids, [[str(slurm.NOBODY)] * 4] * 2)
        self.proxy.clear()
        self.kill_bg(p)

    def test_max_unpacked_bounds_a_steps_pull(self):
        # The review's finding 5: max_unpacked= is fpull's --max-unpacked for every step.
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.big, "echo", "ran"],
                               check=False, user="nobody")
        self.assertEqual(cp.returncode, 8, cp.stdout + cp.stderr)
        self.assertNotIn("ran", cp.stdout)
        self.assertRegex(cp.stderr, r"unpacked content exceeds the max-unpacked limit of 1 MiB")
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(job_dirs(self.run_dir), [])
        self.assertEqual(holders(self.run_dir), [])

    def test_run_dir_under_a_directory_others_can_write(self):
        # The review's finding 6: whoever makes run_dir first owns every step of the node.
        want = "run_dir %s: refused: %s is writable by others" % (self.run_dir, self.open_dir)
        self.assertIn("fpull: plugstack.conf: " + want, self.cluster.log("slurmd.log"))
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.big, "echo", "ran"],
                               check=False, user="nobody")
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(want, cp.stderr)
        self.assertFalse(os.path.exists(self.run_dir))
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_tasks_of_a_step_share_one_user_namespace(self):
        # What MPI's shared memory needs (issue 30, item 1): a task may open a sibling's
        # /proc/PID/fd, as on the host; with a user namespace per task it may not.
        script = ('echo $$ >/tmp/p$SLURM_PROCID; o=$((1 - SLURM_PROCID)); '
                  'while [ ! -s /tmp/p$o ]; do sleep 0.1; done; '
                  'echo "ns $(readlink /proc/self/ns/user) uid $(id -u)"; '
                  'ls /proc/$(cat /tmp/p$o)/fd >/dev/null && echo fd-ok; sleep 1')
        cp = self.cluster._cmd(["srun", "-n", "2", "--fpull-image=" + self.big,
                                "sh", "-c", script], check=False, user="nobody")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        lines = sorted(cp.stdout.splitlines())
        self.assertEqual(lines.count("fd-ok"), 2, cp.stdout + cp.stderr)
        ns = [ln for ln in lines if ln.startswith("ns ")]
        self.assertEqual(len(ns), 2, cp.stdout)
        self.assertEqual(ns[0], ns[1])
        self.assertTrue(ns[0].endswith(" uid %d" % slurm.NOBODY), ns)


class SlurmSitePolicy(SlurmCase):
    """policy=: the site's containers-policy.json for every step's pull (issue 32): a signed
    image runs, an unsigned one and a local SquashFS file are exit 9, and no option of the
    user's replaces the policy."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        import sigstore
        keys = os.path.join(self.tmp, "keys")
        os.mkdir(keys, 0o755)
        priv, pub = sigstore.make_key(keys, "site")
        os.chmod(pub, 0o644)
        signed = images.push_image(self.client, "hpc/signed", "1.0",
                                   [tools_layer(), os_release("signed")])
        sigstore.sign(self.client, "hpc/signed", signed["digest"], priv,
                      "%s/hpc/signed:1.0" % self.reg.hostport)
        images.push_image(self.client, "hpc/unsigned", "1.0",
                          [tools_layer(), os_release("unsigned")])
        images.push_image(self.client, "hpc/open", "1.0", [tools_layer(), os_release("open")])
        # The site accepts anything from one repository of its own: that is its choice, and
        # the plugin applies the file as written (contract v6's --require-signatures would
        # refuse the scope, so the plugin does not ask for it).
        self.policy = sigstore.policy(
            os.path.join(self.tmp, "policy.json"),
            {self.reg.hostport: [sigstore.key_req(pub)],
             self.reg.hostport + "/hpc/open": [{"type": "insecureAcceptAnything"}]})
        os.chmod(self.policy, 0o644)
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                         "policy=" + self.policy])

    def test_every_steps_pull_is_checked_against_the_sites_policy(self):
        ok = self.cluster._cmd(["srun", "--fpull-image=%s/hpc/signed:1.0" % self.reg.hostport,
                                "cat", "/etc/kind"], check=False, user="nobody")
        self.assertEqual((ok.returncode, ok.stdout), (0, "signed\n"), ok.stderr)
        bad = self.cluster._cmd(["srun", "--fpull-image=%s/hpc/unsigned:1.0" % self.reg.hostport,
                                 "cat", "/etc/kind"], check=False, user="nobody")
        self.assertEqual(bad.returncode, 9, bad.stderr)
        self.assertNotIn("unsigned", bad.stdout)
        self.assertIn(self.policy, bad.stderr)
        ok = self.cluster._cmd(["srun", "--fpull-image=%s/hpc/open:1.0" % self.reg.hostport,
                                "cat", "/etc/kind"], check=False, user="nobody")
        self.assertEqual((ok.returncode, ok.stdout), (0, "open\n"), ok.stderr)
        # A user's own policy (XDG_CONFIG_HOME) does not replace the site's.
        home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(home, "containers"))
        with open(os.path.join(home, "containers", "policy.json"), "w") as f:
            f.write('{"default": [{"type": "insecureAcceptAnything"}]}')
        subprocess.run(["chown", "-R", "nobody", home], check=True)
        bad = self.cluster._cmd(["env", "XDG_CONFIG_HOME=" + home, "srun",
                                 "--fpull-image=%s/hpc/unsigned:1.0" % self.reg.hostport, "true"],
                                check=False, user="nobody")
        self.assertEqual(bad.returncode, 9, bad.stderr)
        # A SquashFS file carries no signature.
        sqsh = os.path.join(self.tmp, "x.sqsh")
        with open(sqsh, "wb") as f:
            f.write(b"hsqs")
        os.chmod(sqsh, 0o644)
        cp = self.cluster._cmd(["srun", "--fpull-image=" + sqsh, "true"], check=False,
                               user="nobody")
        self.assertEqual(cp.returncode, 9, cp.stderr)
        self.assertIn("admits registry images only", cp.stderr)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
