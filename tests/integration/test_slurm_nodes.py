"""Jobs across nodes: the multi-node fixture (tests/fixtures/slurm_nodes.py) itself, and
srun, sbatch, salloc and scancel over several nodes with the plugin under test, each node
running the step in the image pulled from the real docker-registry on the cluster's
bridge."""
import os
import re
import signal
import subprocess
import sys
import time
import unittest

import slurm
import slurm_nodes
from nodes_case import N, NodesCase


class NodesFixture(unittest.TestCase):
    """N nodes come up in seconds, and go leaving nothing behind."""

    def setUp(self):
        slurm.require(self)

    def test_nodes_are_apart_and_leave_nothing(self):
        c = slurm_nodes.Nodes(N)
        self.addCleanup(c.stop)
        c.start()
        self.assertLess(c.up_seconds, 30)
        cp = c.run(["srun", "-N%d" % N, "sh", "-c",
                    'echo "$(cat /proc/sys/kernel/hostname) '
                    '$(ip -o -4 addr show eth0 | awk "{print \\$4}") '
                    '$(cat /proc/sys/kernel/random/boot_id)"'])
        self.assertEqual(cp.returncode, 0, cp.stderr + c.logs())
        rows = sorted(line.split() for line in cp.stdout.splitlines())
        self.assertEqual([r[0] for r in rows], c.names)
        self.assertEqual([r[1].split("/")[0] for r in rows], [nd["ip"] for nd in c.nodes])
        self.assertEqual(len({r[2] for r in rows}), N, rows)  # a boot_id per node
        # Each node's run directory is its own: a file one node writes there is not
        # another's.
        cp = c.run(["srun", "-N%d" % N, "sh", "-c",
                    'cat /proc/sys/kernel/hostname >%s/me' % c.path("node", "run")],
                   user="root")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        for name in c.names:
            with open(c.node_path(name, "run", "me")) as f:
                self.assertEqual(f.read().strip(), name)
        self.assertFalse(os.path.exists(c.path("node", "run", "me")))
        # A task left running is ended by stop() with everything else.
        sleeper = subprocess.Popen(
            ["srun", "-N%d" % N, "sleep", "600"], env=c.env(), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        self.addCleanup(sleeper.kill)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                any(not slurm_nodes._netns_pids(nd["netns"]) for nd in c.nodes):
            time.sleep(0.1)
        ns = [nd["netns"] for nd in c.nodes]
        self.assertTrue(all(slurm_nodes._netns_pids(x) for x in ns))
        t0 = time.monotonic()
        c.stop()
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(c.leftovers(), [])
        sleeper.kill()
        sleeper.wait()

    def test_accounting_counts_each_nodes_cpu_and_writes_apart(self):
        # accounting=True (scripts/bench --slurm-nodes): each node's processes in a cgroup
        # of its own, CPU and bytes written counted per node, the step's included.
        c = slurm_nodes.Nodes(2, accounting=True, fuse_open=True)
        self.addCleanup(c.stop)
        c.start()
        host_fuse = os.stat("/dev/fuse").st_mode & 0o777 if os.path.exists("/dev/fuse") \
            else None
        before = {n: c.usage(n) for n in c.names}
        out = os.path.join(c.path("node", "tmp"), "written")
        cp = c.run(["srun", "-N1", "-w", "node1", "sh", "-c",
                    "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; "
                    "dd if=/dev/zero of=%s bs=1M count=8 status=none; rm %s; "
                    "cat /proc/self/cgroup" % (out, out)])
        self.assertEqual(cp.returncode, 0, cp.stderr + c.logs())
        self.assertIn("/fpull-nodes-%d/node1" % c.k, cp.stdout)
        if host_fuse is not None:
            # fuse_open=True: the nodes' /dev/fuse is Debian's 0666, this machine's as it was.
            cp = c.run(["srun", "-N2", "stat", "-c", "%a", "/dev/fuse"])
            self.assertEqual(cp.stdout.split(), ["666", "666"], cp.stderr)
            self.assertEqual(os.stat("/dev/fuse").st_mode & 0o777, host_fuse)
        c.settled()
        after = {n: c.usage(n) for n in c.names}
        cpu = {n: after[n]["cpu_usec"] - before[n]["cpu_usec"] for n in c.names}
        wrote = {n: after[n]["write_bytes"] - before[n]["write_bytes"] for n in c.names}
        self.assertGreater(cpu["node1"], 150000, (cpu, after))  # the loop's 0.2-0.3 s
        self.assertLess(cpu["node2"], cpu["node1"] / 3, cpu)
        # 8 MiB dirtied and removed before writeback still count (task accounting).
        self.assertGreaterEqual(wrote["node1"], 8 << 20, (wrote, after))
        self.assertLess(wrote["node2"], 1 << 20, wrote)
        cg = c.node_cgroup("node1")
        c.stop()
        self.assertEqual(c.leftovers(), [])
        self.assertFalse(os.path.exists(cg))

    def test_accounting_and_fuse_open_are_off_by_default(self):
        c = slurm_nodes.Nodes(1)
        self.addCleanup(c.stop)
        c.start()
        cp = c.run(["srun", "-N1", "cat", "/proc/self/cgroup"])
        self.assertEqual(cp.returncode, 0, cp.stderr + c.logs())
        self.assertNotIn("fpull-nodes-", cp.stdout)
        if os.path.exists("/dev/fuse"):
            cp = c.run(["srun", "-N1", "stat", "-c", "%a", "/dev/fuse"])
            self.assertEqual(cp.stdout.strip(), "%o" % (os.stat("/dev/fuse").st_mode & 0o777))
        self.assertRaises(slurm_nodes.NodesError, c.usage, "node1")

    def test_a_second_stop_leaves_the_next_cluster_alone(self):
        # A test that stops its cluster and has stop() as a cleanup too stops it twice;
        # the second came after another test had claimed the same K, removed that one's
        # bridge and namespaces, and failed it (a CI-like run: "fpt0br ... Device does not
        # exist" while its nodes were being added).
        a = slurm_nodes.Nodes(1)
        self.addCleanup(a.stop)
        a.start()
        a.stop()
        b = slurm_nodes.Nodes(1)
        self.addCleanup(b.stop)
        b.start()
        self.assertEqual(b.k, a.k)  # the first free K: the one a released
        a.stop()
        self.assertEqual(a.leftovers(), [])
        self.assertIn("%s%dbr" % (slurm_nodes.PREFIX, b.k), slurm_nodes._links())
        self.assertIn(b.nodes[0]["netns"], slurm_nodes._netns_list())
        cp = b.run(["srun", "-N1", "true"])
        self.assertEqual(cp.returncode, 0, cp.stderr + b.logs())
        b.stop()
        self.assertEqual(b.leftovers(), [])

    def test_a_cluster_whose_owner_was_killed_is_removed_by_the_next(self):
        """A test process killed without stop() (a ctest timeout): its daemons die with it
        and the next start() removes its namespaces, links and directory."""
        code = ("import sys, time; sys.path.insert(0, %r); import slurm_nodes; "
                "c = slurm_nodes.Nodes(2).start(); print(c.k, c.workdir, flush=True); "
                "time.sleep(600)" % os.path.dirname(slurm_nodes.__file__))
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        k, workdir = p.stdout.readline().split()
        k = int(k)
        self.assertIn("%s%d-n1" % (slurm_nodes.PREFIX, k), slurm_nodes._netns_list())
        p.send_signal(signal.SIGKILL)
        p.wait()
        slurm_nodes.reclaim_stale()  # what every start() does first
        self.assertFalse([ns for ns in slurm_nodes._netns_list()
                          if ns.startswith("%s%d-" % (slurm_nodes.PREFIX, k))])
        self.assertFalse([ln for ln in slurm_nodes._links()
                          if re.match(r"^%s%d(br|v\d+)$" % (slurm_nodes.PREFIX, k), ln)])
        self.assertFalse(os.path.exists(workdir))
        # Its daemons died with their parent (PR_SET_PDEATHSIG).
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self._procs_in(workdir):
            time.sleep(0.2)
        self.assertEqual(self._procs_in(workdir), [])

    @staticmethod
    def _procs_in(workdir):
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if workdir.encode() in f.read():
                        found.append(pid)
            except OSError:
                pass
        return found


class NodesJobs(NodesCase):
    """srun, sbatch, salloc and scancel over several nodes, each in the image."""

    def test_srun_on_four_nodes_runs_in_the_image(self):
        cp = self.srun(["-N%d" % N, "--fpull-image=" + self.ref, "sh", "-c",
                        'echo "$SLURMD_NODENAME $(cat /etc/kind) $FPULL_IMAGE_DIGEST $(pwd)"'])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        self.assertEqual(sorted(cp.stdout.splitlines()), [
            "%s image-os %s /tmp" % (n, self.image["digest"]) for n in self.cluster.names])
        # One line per node says what it chose.
        chosen = re.findall(r"(?m)^fpull: (\S+): %s: %s \(" % (
            re.escape(self.ref), self.image["digest"]), cp.stderr)
        self.assertEqual(sorted(chosen), self.cluster.names, cp.stderr)
        self.assert_clean()

    def test_sbatch_on_two_nodes_script_and_steps(self):
        # A host script whose steps name the image (the script itself in an image:
        # test_slurm.test_batch_script_runs_in_the_image, and below).
        cp, job = self.cluster.sbatch(
            ["-N2"],
            'echo "script on $SLURMD_NODENAME kind=$(cat /etc/kind 2>/dev/null || '
            'echo host)"\n'
            'srun --fpull-image={0} sh -c \'echo "step on $SLURMD_NODENAME $(cat /etc/kind)"\'\n'
            'srun --fpull-image={0} -N1 -n1 sh -c \'echo "small step $(cat /etc/kind)"\'\n'
            .format(self.ref))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        out = self.cluster.output(job)
        self.assertEqual((rec["JobState"], rec["ExitCode"]), ("COMPLETED", "0:0"), out)
        nodes = slurm_nodes_expand(rec["NodeList"], self.cluster.env())
        self.assertEqual(len(nodes), 2, rec)
        lines = [ln for ln in out.splitlines() if not ln.startswith("fpull:") and
                 not re.match(r"^\S+: (done|pulling|resolving)", ln)]
        # The script runs on the first node, on the node (not in the image); each step in
        # the image on its nodes.
        self.assertIn("script on %s kind=host" % nodes[0], lines)
        self.assertEqual(sorted(ln for ln in lines if ln.startswith("step on")),
                         ["step on %s image-os" % n for n in nodes], out)
        self.assertIn("small step image-os", lines)
        # With sbatch's --fpull-image the script runs in the image, on the first node.
        cp, job = self.cluster.sbatch(
            ["-N2", "--fpull-image=" + self.ref],
            'echo "script on $SLURMD_NODENAME kind=$(cat /etc/kind)"\n')
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        out = self.cluster.output(job)
        self.assertEqual((rec["JobState"], rec["ExitCode"]), ("COMPLETED", "0:0"), out)
        first = slurm_nodes_expand(rec["NodeList"], self.cluster.env())[0]
        self.assertIn("script on %s kind=image-os" % first, out.splitlines(), out)
        self.assert_clean()

    def test_salloc_on_two_nodes(self):
        cp = self.cluster.run(["salloc", "-N2", "--fpull-image=" + self.ref, "srun", "sh",
                               "-c", 'echo "$SLURMD_NODENAME $(cat /etc/kind)"'])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        got = sorted(cp.stdout.splitlines())
        self.assertEqual(len(got), 2, cp.stdout)
        self.assertEqual(len({g.split()[0] for g in got}), 2, got)
        self.assertTrue(all(g.split()[1] == "image-os" for g in got), got)
        self.assert_clean()

    def test_scancel_of_a_running_four_node_step(self):
        p = subprocess.Popen(
            ["runuser", "-u", "nobody", "--", "srun", "-N%d" % N, "-J", "long",
             "--fpull-image=" + self.ref, "--fpull-mounts=%s:/out" % self.cluster.outdir,
             "sh", "-c", 'echo >/out/started-$SLURMD_NODENAME; exec sleep 600'],
            env=self.cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.addCleanup(kill_group, p)
        deadline = time.monotonic() + 120
        want = {"started-" + n for n in self.cluster.names}
        while time.monotonic() < deadline and \
                not want <= set(os.listdir(self.cluster.outdir)):
            time.sleep(0.2)
        if not want <= set(os.listdir(self.cluster.outdir)):
            kill_group(p)
            self.fail("".join(p.communicate(timeout=30)) + self.cluster.logs())
        sleepers = self.sleepers()
        self.assertEqual(len(sleepers), N, sleepers)
        cp = self.cluster.run(["scancel", "-n", "long"], user="nobody")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        out, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(self.sleepers(), [])
        self.assert_clean()

    def sleepers(self):
        """pids of 'sleep 600' processes in the nodes' namespaces."""
        found = []
        for nd in self.cluster.nodes:
            for pid in slurm_nodes._netns_pids(nd["netns"]):
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        if f.read().split(b"\0")[:2] == [b"sleep", b"600"]:
                            found.append(pid)
                except OSError:
                    pass
        return found


def kill_group(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def slurm_nodes_expand(nodelist, env):
    """node[1-2] / node[1,3] / node1 as a list of names."""
    return subprocess.run(["scontrol", "show", "hostnames", nodelist], stdout=subprocess.PIPE,
                          text=True, check=True, env=env).stdout.split()
