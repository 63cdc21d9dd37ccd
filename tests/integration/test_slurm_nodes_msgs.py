"""What a step over several nodes says (issue 41 item 7): an error line names the node it
comes from (the multi-node fixture, tests/fixtures/slurm_nodes.py)."""
import re

from nodes_case import N, NodesCase


class NodesMessages(NodesCase):
    def test_error_lines_name_the_node(self):
        # An image the registry lacks: every node fails, and each line says which node.
        missing = "%s/hpc/nope:1.0" % self.reg.hostport
        cp = self.srun(["-N%d" % N, "--fpull-image=" + missing, "true"])
        self.assertNotEqual(cp.returncode, 0)
        said = re.findall(r"(?m)^fpull: (\S+): %s: .*not found" % re.escape(missing), cp.stderr)
        self.assertEqual(sorted(said), self.cluster.names, cp.stderr)
        self.assert_clean()
