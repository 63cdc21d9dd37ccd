"""What a step over several nodes says (issue 41 item 7): an error line names the node it
comes from, and a cancelled step says so once, not once per node (the multi-node fixture,
tests/fixtures/slurm_nodes.py)."""
import os
import re
import signal
import socket
import subprocess
import threading
import time

from nodes_case import N, NodesCase
from test_slurm_nodes import kill_group


class Hung:
    """A registry on the cluster's bridge that accepts connections and never answers: each
    node's pull waits in it until the step is cancelled."""

    def __init__(self, host):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.hostport = "%s:%d" % (host, self.sock.getsockname()[1])
        self.peers = set()
        self.conns = []
        self.done = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.done:
            try:
                c, addr = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            self.peers.add(addr[0])

    def close(self):
        self.done = True
        self.sock.close()
        for c in self.conns:
            c.close()


class NodesMessages(NodesCase):
    def test_error_lines_name_the_node(self):
        # An image the registry lacks: every node fails, and each line says which node.
        missing = "%s/hpc/nope:1.0" % self.reg.hostport
        cp = self.srun(["-N%d" % N, "--fpull-image=" + missing, "true"])
        self.assertNotEqual(cp.returncode, 0)
        said = re.findall(r"(?m)^fpull: (\S+): %s: .*not found" % re.escape(missing), cp.stderr)
        self.assertEqual(sorted(said), self.cluster.names, cp.stderr)
        self.assert_clean()

    def test_a_cancelled_step_says_it_once(self):
        self.cancel_during_the_pull(lambda p: self.assertEqual(self.cluster.run(
            ["scancel", "-n", "hang"], user="nobody").returncode, 0))

    def test_a_step_ended_with_ctrl_c_says_it_once(self):
        def ctrl_c(p):
            # srun's Ctrl-C twice within a second ends the step.
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(0.3)
            os.killpg(p.pid, signal.SIGINT)
        self.cancel_during_the_pull(ctrl_c)

    def cancel_during_the_pull(self, cancel):
        hung = Hung(self.cluster.bridge_ip)
        self.addCleanup(hung.close)
        with open(self.config, "w") as f:
            f.write('insecure-registries: ["%s", "%s"]\n' % (self.reg.hostport, hung.hostport))
        image = "%s/hpc/hang:1.0" % hung.hostport
        # missing: no tag resolved at submit (that would hang srun itself); each node asks.
        p = subprocess.Popen(
            ["runuser", "-u", "nobody", "--", "srun", "-N%d" % N, "-J", "hang",
             "--fpull-pull=missing", "--fpull-image=" + image, "echo", "ran"],
            env=self.cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.addCleanup(kill_group, p)
        deadline = time.monotonic() + 120
        want = {nd["ip"] for nd in self.cluster.nodes}
        while time.monotonic() < deadline and not want <= hung.peers and p.poll() is None:
            time.sleep(0.2)
        if not want <= hung.peers:
            kill_group(p)
            self.fail("not every node's pull reached the registry: %s %s" % (
                hung.peers, "".join(p.communicate(timeout=30))))
        cancel(p)
        out, err = p.communicate(timeout=90)
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("ran", out)
        # One line from fpull for the step, from its first node; none from the others.
        said = [ln for ln in err.splitlines() if ln.startswith("fpull: ")]
        self.assertEqual(len(said), 1, err)
        self.assertRegex(said[0], r"^fpull: %s: %s: the pull was cancelled" % (
            self.cluster.names[0], re.escape(image)))
        self.assert_clean()
