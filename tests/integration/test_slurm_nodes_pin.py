"""One resolution per job (issue 41.2) on the multi-node fixture: the submit command
resolves an --fpull-image tag once and every node of every step runs that index's entry,
reading manifests and blobs by digest from the shared cache. Counted in the registry's
access log: a warm 3-node job costs the registry the submit's check and nothing else, and
a tag moved during the job does not split it."""
import os
import re
import subprocess
import time

import images
import slurm
from nodes_case import NodesCase
from test_slurm import os_release, tools_layer

NODES = 3


def registry_requests(log_path):
    """The requests in a docker-registry access log."""
    with open(log_path, errors="replace") as f:
        return [m.group(1) for m in re.finditer(r'"((?:GET|HEAD) /v2/[^ ]*) HTTP/', f.read())]


class OneResolutionPerJob(NodesCase):
    nodes = NODES

    def plugin_args(self):
        return super().plugin_args() + ["shared_cache=@WORKDIR@/shared/fpull"]

    def setUp(self):
        super().setUp()
        site = os.path.join(self.cluster.shared, "fpull")
        os.mkdir(site)
        os.chmod(site, 0o755)  # root's: the plugin makes each DIR/UID (issue 39)

    def test_warm_job_asks_the_registry_once_and_a_moved_tag_never_splits_it(self):
        # An index, as multi-build images are (the submit's check then reads the index
        # alone; a single manifest's check also reads its config, once per submit).
        amd64 = {"os": "linux", "architecture": "amd64"}
        images.push_index(self.client, "hpc/os", "idx", [(self.image, amd64)])
        self.ref = "%s/hpc/os:idx" % self.reg.hostport
        n = "-N%d" % NODES
        cp = self.srun([n, "--fpull-image=" + self.ref, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-os\n" * NODES),
                         cp.stderr + self.cluster.logs())
        before = len(registry_requests(self.reg.log_path))
        flag = os.path.join(self.cluster.shared, "moved")
        # Two steps in one allocation; between them the tag moves to another image.
        script = ("srun %s cat /etc/kind; echo step-done; "
                  "while [ ! -e %s ]; do sleep 0.2; done; srun %s cat /etc/kind" % (n, flag, n))
        argv = ["runuser", "-u", "nobody", "--", "salloc", n, "--fpull-image=" + self.ref,
                "sh", "-c", script]
        p = subprocess.Popen(argv, env=self.cluster.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        out = []
        for line in iter(p.stdout.readline, ""):
            out.append(line)
            if line == "step-done\n":
                break
        self.assertEqual(out, ["image-os\n"] * NODES + ["step-done\n"])
        time.sleep(1)  # the access log is written as requests end
        first = registry_requests(self.reg.log_path)[before:]
        moved = images.push_image(self.client, "hpc/os", None,
                                  [tools_layer(self.tools()), os_release("image-moved")])
        images.push_index(self.client, "hpc/os", "idx", [(moved, amd64)])
        pushed = len(registry_requests(self.reg.log_path))
        open(flag, "w").close()
        rest, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err + self.cluster.logs())
        self.assertEqual(rest, "image-os\n" * NODES, err)
        time.sleep(1)
        second = registry_requests(self.reg.log_path)[pushed:]
        # salloc's check of the tag (the registry's /v2/ and the tag), then nothing from any
        # node of either step.
        self.assertLessEqual(len(first), 2, first)
        self.assertEqual([r for r in first if "/manifests/" in r],
                         ["GET /v2/hpc/os/manifests/idx"], first)
        self.assertEqual(second, [])
        # A new job sees the moved tag.
        cp = self.srun([n, "--fpull-image=" + self.ref, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-moved\n" * NODES), cp.stderr)
        self.assert_clean()
