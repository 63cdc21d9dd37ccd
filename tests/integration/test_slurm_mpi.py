"""MPI in a step's container (issue 30, item 1), on the real Slurm of the fixture: Debian's
MPICH over Slurm's pmi2 and Open MPI over its pmix, at -n 4 on the one node with their
default transports (UCX's shared memory opens a sibling's /proc/PID/fd, Open MPI's vader
reads it with cross-memory attach), and a program of two tasks that reads the other's
memory with process_vm_readv. Each program is built here from the text below, and its
image holds it, what `ldd` says it needs and what MPI loads with dlopen at run time, as a
site's image would."""
import glob
import os
import re
import shutil
import subprocess

import fpull
import images
import slurm
from test_slurm import DATA_DIR, PLUGIN, SlurmCase, tools_layer

ALLREDUCE = r"""
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  int rank, size, mine, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mine = rank + 1;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d size %d sum %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
"""

CMA = r"""
/* Cross-memory attach between two tasks: task 0 keeps VALUE in its memory and writes its
 * pid and the value's address to DIR/cma.addr; task 1 reads the value with
 * process_vm_readv, prints it and writes DIR/cma.done, which task 0 waits for.
 * argv: DIR VALUE. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

static char value[128];

static int wait_for(const char *path)
{
  for (int i = 0; i < 600; i++) {
    if (access(path, F_OK) == 0)
      return 0;
    usleep(50000);
  }
  fprintf(stderr, "task %s: timed out waiting for %s\n", getenv("SLURM_PROCID"), path);
  return -1;
}

int main(int argc, char **argv)
{
  const char *rank = getenv("SLURM_PROCID");
  char addr_path[4096], tmp_path[4096], done_path[4096];
  if (argc != 3 || !rank || strlen(argv[2]) >= sizeof value)
    return 2;
  snprintf(addr_path, sizeof addr_path, "%s/cma.addr", argv[1]);
  snprintf(tmp_path, sizeof tmp_path, "%s/cma.addr.tmp", argv[1]);
  snprintf(done_path, sizeof done_path, "%s/cma.done", argv[1]);
  if (strcmp(rank, "0") == 0) {
    strcpy(value, argv[2]);
    /* As Open MPI's and UCX's CMA do: where Yama allows ptrace only to ancestors, this
     * task allows its sibling. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    FILE *f = fopen(tmp_path, "w");
    if (!f || fprintf(f, "%ld %p %zu\n", (long)getpid(), (void *)value, strlen(value)) < 0 ||
        fclose(f) != 0 || rename(tmp_path, addr_path) != 0) {
      perror(addr_path);
      return 1;
    }
    return wait_for(done_path) == 0 ? 0 : 1;
  }
  if (wait_for(addr_path) < 0)
    return 1;
  long pid = 0;
  void *addr = NULL;
  size_t len = 0;
  FILE *f = fopen(addr_path, "r");
  if (!f || fscanf(f, "%ld %p %zu", &pid, &addr, &len) != 3 || len >= sizeof value) {
    fprintf(stderr, "%s: unreadable\n", addr_path);
    return 1;
  }
  fclose(f);
  char got[sizeof value] = {0};
  struct iovec local = {got, len}, remote = {addr, len};
  ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
  int saved = errno;
  FILE *done = fopen(done_path, "w");
  if (done)
    fclose(done);
  if (n != (ssize_t)len) {
    printf("process_vm_readv(%ld): %s\n", pid, n < 0 ? strerror(saved) : "short read");
    return 1;
  }
  printf("read from task 0: %s\n", got);
  return 0;
}
"""

LIBDIR = "/usr/lib/x86_64-linux-gnu"


def needed(path):
    """The shared libraries `ldd` says PATH needs (host paths)."""
    out = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    if "not found" in out:
        raise AssertionError("ldd %s: a library is missing:\n%s" % (path, out))
    return [m.group(1) for m in re.finditer(r"(/\S+) \(0x", out)]


class SlurmMPI(SlurmCase):
    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.cluster = self.start_cluster(
            plugin=PLUGIN, plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                                        "data_dir=" + DATA_DIR, "fpull=" + fpull.binary()])

    def mpi_types(self):
        """What `srun --mpi=list` names on this cluster."""
        cp = self.cluster._cmd(["srun", "--mpi=list"], check=False)
        return cp, set(re.findall(r"^\s*(?:srun: )?(\S+)\s*$", cp.stdout + cp.stderr, re.M))

    def build(self, compiler, source, name, flags=()):
        if not shutil.which(compiler):
            self.skipTest("%s is not installed" % compiler)
        src = os.path.join(self.tmp, name + ".c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(self.tmp, name)
        subprocess.run([compiler, "-O2", "-Wall", "-o", out, src] + list(flags), check=True)
        return out

    def push(self, name, program, modules=(), files=()):
        """An image of PROGRAM (as /opt/bin/NAME), the tools of test_slurm, what ldd says
        they and MODULES (libraries loaded with dlopen, kept at their host paths) need, and
        FILES (host paths); uncompressed, so that no time goes into gzip."""
        with open(program, "rb") as f:
            prog = [{"path": "opt/bin/" + name, "data": f.read(), "mode": 0o755}]
        libs = tools_layer(tuple(needed(program)) + tuple(modules))
        extra = []
        for p in files:
            with open(p, "rb") as f:
                extra.append({"path": p.lstrip("/"), "data": f.read()})
        images.push_image(self.client, "hpc/" + name, "1.0", [libs, prog + extra],
                          compression=None,
                          config_extra={"config": {"Env": ["PATH=/opt/bin:/usr/bin:/bin"],
                                                   "WorkingDir": "/tmp"}})
        return "%s/hpc/%s:1.0" % (self.reg.hostport, name)

    def srun(self, *args):
        return self.cluster._cmd(["srun"] + list(args), check=False, user="nobody")

    def assert_ranks(self, cp, n=4):
        out = cp.stdout + cp.stderr
        self.assertEqual(cp.returncode, 0, out)
        want = ["rank %d size %d sum %d" % (r, n, n * (n + 1) // 2) for r in range(n)]
        got = sorted(ln for ln in cp.stdout.splitlines() if ln.startswith("rank "))
        self.assertEqual(got, want, out)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_mpich_allreduce_over_pmi2_with_default_transports(self):
        cp, types = self.mpi_types()
        if "pmi2" not in types:
            self.skipTest("this Slurm has no mpi/pmi2 plugin (srun --mpi=list: %s)" %
                          (cp.stdout + cp.stderr).strip())
        prog = self.build("mpicc.mpich", ALLREDUCE, "allreduce")
        # UCX loads its transports (cma, ib, rdmacm) from its module directory with dlopen.
        ucx = sorted(glob.glob(os.path.join(LIBDIR, "ucx", "libuct_*.so.0")))
        self.assertTrue(ucx, "no UCX modules in %s/ucx" % LIBDIR)
        ref = self.push("allreduce", prog, ucx)
        cp = self.srun("--mpi=pmi2", "-n", "4", "-O", "--fpull-image=" + ref, "allreduce")
        self.assert_ranks(cp)
