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
from test_slurm import DATA_DIR, PLUGIN, TOOLS, SlurmCase, tools_layer

ALLREDUCE = r"""
/* Every rank gives rank + 1 in each of COUNT ints: 4 MiB, so that besides the shared memory
 * queues of small messages, the transports' single copy (cross-memory attach) moves it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT (1 << 20)

int main(int argc, char **argv)
{
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int *mine = malloc(COUNT * sizeof *mine), *sum = calloc(COUNT, sizeof *sum);
  if (!mine || !sum)
    MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < COUNT; i++)
    mine[i] = rank + 1;
  MPI_Allreduce(mine, sum, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 1; i < COUNT; i++)
    if (sum[i] != sum[0]) {
      printf("rank %d: element %d is %d, element 0 is %d\n", rank, i, sum[i], sum[0]);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  printf("rank %d size %d sum %d\n", rank, size, sum[0]);
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

    def require_mpi_type(self, name):
        cp = self.cluster._cmd(["srun", "--mpi=list"], check=False)
        listed = re.findall(r"(?m)^\s+(\S+)$", cp.stdout + cp.stderr)
        if name not in listed:
            self.skipTest("this Slurm has no mpi/%s plugin (srun --mpi=list: %s)" % (
                name, " ".join(listed) or (cp.stdout + cp.stderr).strip()))

    def require_pmix(self):
        self.require_mpi_type("pmix")
        # Slurm's mpi/pmix loads the PMIx server library by its development name.
        if not any(os.path.exists(os.path.join(d, "libpmix.so"))
                   for d in (LIBDIR, os.path.join(LIBDIR, "pmix2", "lib"))):
            self.skipTest("Slurm's mpi/pmix loads libpmix.so, which is not installed "
                          "(Debian: libpmix-dev)")

    def require_cross_memory_attach(self):
        # Yama's ptrace_scope 3 forbids it to every process, on the host as in a container.
        try:
            with open("/proc/sys/kernel/yama/ptrace_scope") as f:
                scope = f.read().strip()
        except OSError:
            return
        if scope == "3":
            self.skipTest("kernel.yama.ptrace_scope is 3 on this host: no process may use "
                          "process_vm_readv on another, in a container or not")

    def build(self, compiler, source, name, package):
        """SOURCE compiled with COMPILER (of the Debian PACKAGE) into the test's directory."""
        if not shutil.which(compiler):
            self.skipTest("%s is not installed (Debian: %s)" % (compiler, package))
        src = os.path.join(self.tmp, name + ".c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(self.tmp, name)
        subprocess.run([compiler, "-O2", "-Wall", "-o", out, src], check=True)
        return out

    def push(self, name, program=None, modules=(), files=()):
        """An image of PROGRAM (as /opt/bin/NAME), the tools of test_slurm, what ldd says
        they and MODULES (libraries loaded with dlopen, kept at their host paths) need, and
        FILES (host paths, files or directories); uncompressed, so that no time goes into
        gzip."""
        prog = []
        if program:
            with open(program, "rb") as f:
                prog = [{"path": "opt/bin/" + name, "data": f.read(), "mode": 0o755}]
        libs = tools_layer(TOOLS + tuple(needed(program) if program else ()) + tuple(modules))
        extra = []
        for top in files:
            walk = os.walk(top) if os.path.isdir(top) else [("", [], [top])]
            for d, _, names in walk:
                for n in names:
                    with open(os.path.join(d, n), "rb") as f:
                        extra.append({"path": os.path.join(d, n).lstrip("/"), "data": f.read()})
        images.push_image(self.client, "hpc/" + name, "1.0", [libs, prog + extra],
                          compression=None,
                          config_extra={"config": {"Env": ["PATH=/opt/bin:/usr/bin:/bin"],
                                                   "WorkingDir": "/tmp"}})
        return "%s/hpc/%s:1.0" % (self.reg.hostport, name)

    def srun(self, *args):
        return self.cluster._cmd(["srun"] + list(args), check=False, user="nobody")

    def assert_ranks(self, cp, ref, n=4):
        """Exit 0, each rank's line, and on stderr nothing but fpull's own lines: MPI
        libraries warn there when they fall back from a transport that failed."""
        out = cp.stdout + cp.stderr
        self.assertEqual(cp.returncode, 0, out)
        want = ["rank %d size %d sum %d" % (r, n, n * (n + 1) // 2) for r in range(n)]
        self.assertEqual(sorted(cp.stdout.splitlines()), want, out)
        others = [ln for ln in cp.stderr.splitlines()
                  if not ln.startswith((ref + ": ", "fpull: "))]
        self.assertEqual(others, [], cp.stderr)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_mpich_allreduce_over_pmi2_with_default_transports(self):
        self.require_mpi_type("pmi2")
        prog = self.build("mpicc.mpich", ALLREDUCE, "allreduce", "mpich libmpich-dev")
        # UCX loads its transports (cma, ib, rdmacm) from its module directory with dlopen.
        # hwloc's plugins (PCI, GL, OpenCL, libxml: X11 and ICU, 40 MB) are left out: hwloc
        # reads the topology from /sys without them, on the host as in the image.
        ucx = sorted(glob.glob(os.path.join(LIBDIR, "ucx", "libuct_*.so.0")))
        self.assertTrue(ucx, "no UCX modules in %s/ucx" % LIBDIR)
        ref = self.push("allreduce", prog, ucx)
        cp = self.srun("--mpi=pmi2", "-n", "4", "-O", "--fpull-image=" + ref, "allreduce")
        self.assert_ranks(cp, ref)

    def test_openmpi_allreduce_over_pmix_with_default_transports(self):
        self.require_pmix()
        self.require_cross_memory_attach()
        prog = self.build("mpicc.openmpi", ALLREDUCE, "allreduce",
                          "openmpi-bin libopenmpi-dev")
        # Open MPI's components and PMIx's plugins are loaded with dlopen; Debian's
        # openmpi-mca-params.conf is the node's default choice of transports (vader's shared
        # memory and cross-memory attach here, UCX's pml off), the help files say what failed.
        ompi = os.path.join(LIBDIR, "openmpi", "lib", "openmpi3")
        pmix = os.path.join(LIBDIR, "pmix2")
        modules = sorted(glob.glob(os.path.join(ompi, "*.so")) +
                         glob.glob(os.path.join(pmix, "lib", "pmix", "*.so")))
        self.assertTrue(modules, "no Open MPI components in " + ompi)
        ref = self.push("allreduce", prog, modules,
                        [p for p in ("/etc/openmpi/openmpi-mca-params.conf", "/usr/share/openmpi",
                                     os.path.join(pmix, "share")) if os.path.exists(p)])
        # PMIx's clients map the server's data store from slurmd's spool directory, which
        # the plugin mounts (test_pmix_server_tmpdir_is_in_the_container).
        cp = self.srun("--mpi=pmix", "-n", "4", "-O", "--fpull-image=" + ref, "allreduce")
        # vader's single copy is cross-memory attach, which it does not even try between
        # tasks in different user namespaces ("CMA is not available due to different user
        # namespaces"): it would fall back, with a warning per rank.
        self.assertNotIn("different user namespaces", cp.stderr)
        self.assert_ranks(cp, ref)

    def test_pmix_server_tmpdir_is_in_the_container(self):
        # Slurm's mpi/pmix keeps the step's PMIx data store (a lock and the job's data that
        # every client maps) in PMIX_SERVER_TMPDIR, SlurmdSpoolDir/pmix.JOB.STEP; enroot's
        # hook mounts it for pyxis (pyxis's test "PMIx mount"). Without it, every Open MPI
        # rank says "PMIX ERROR: ERROR in file .../gds_ds12_lock_pthread.c at line 169".
        self.require_pmix()
        ref = self.push("tools")
        cp = self.srun("--mpi=pmix", "-n", "2", "-O", "--fpull-image=" + ref, "sh", "-c",
                       'echo "dir $PMIX_SERVER_TMPDIR"; ls "$PMIX_SERVER_TMPDIR"')
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        lines = cp.stdout.splitlines()
        dirs = {ln for ln in lines if ln.startswith("dir ")}
        self.assertEqual(len(dirs), 1, cp.stdout)
        self.assertTrue(dirs.pop().startswith("dir %s/pmix." % self.cluster.path("spool")),
                        cp.stdout)
        self.assertEqual(len([ln for ln in lines if ln.startswith("pmix_dstor_ds21_")]), 2,
                         cp.stdout)

    def test_process_vm_readv_between_two_tasks(self):
        self.require_cross_memory_attach()
        prog = self.build("cc", CMA, "cma", "gcc")
        ref = self.push("cma", prog)
        value = "fpull-cma-" + os.urandom(8).hex()
        cp = self.srun("-n", "2", "-O", "--fpull-image=" + ref, "cma", "/tmp", value)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        self.assertEqual(cp.stdout, "read from task 0: %s\n" % value, cp.stderr)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
