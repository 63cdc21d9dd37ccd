"""pyxis's own test suite, run against fpull's plugin (issue 30 item 10).

NVIDIA/pyxis 0.24.0 has 187 `@test` cases in tests/*.bats and tests/sbatch/sbatch.bats.
PYXIS below lists every one of them, by file and name, with what became of it here:

  ported   run as pyxis means it: --container-X is --fpull-X (docs/cluster.md section 8),
           the public image is one built here from the host's programs with the files the
           test greps, pushed to the test registry; the same output is checked and the same
           exit status expected (fpull's words where pyxis greps enroot's message)
  part     ported, but for a part that cannot apply (why says which)
  differs  pyxis's behaviour and fpull's documented one differ: fpull's is asserted
  gap      run as pyxis means it and fails today for the gap named: the case must keep
           failing on its "pyxis expects" assertion until the gap is closed, then the entry
           is to be marked ported, or differs where the case's comment says so (a gap that
           no longer fails fails the test)
  n/a      cannot apply here (why says which: a GPU, the internet, enroot itself, an option
           fpull lacks)

As pyxis's suite runs inside one allocation (salloc, then bats), each method here runs
its cases as subtests in one allocation (`salloc --no-shell`, then `srun` steps in it as
the user nobody) on one cluster; a method checks that every runnable entry of its files
ran. docs/cluster.md section 8 lists every entry that is not plainly ported, checked here.
With FPULL_PYXIS_TESTS naming pyxis's tests/ directory, the list is checked against it.
"""
import base64
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

import fpull
import images
import slurm
from test_slurm import DATA_DIR, PLUGIN, SlurmCase, on_node, tools_layer

# -- what became of each pyxis test ---------------------------------------------------------
NA_ENV_VARS = ("PYXIS_* environment variables: fpull's options are command-line options or "
               "#SBATCH lines only")
NA_UNSHARE = ("--container-unshare: fpull has no option for private network, IPC or UTS "
              "namespaces; tasks share the node's, as MPI and NCCL expect")
NA_GPU = ("needs NVIDIA GPUs and the NVIDIA Container Toolkit (nvidia_hook=), which the "
          "machines this suite runs on lack")
NA_ARCHIVE = ("installs packages from a distribution's archive or PyPI (apt-get, yum, pip): "
              "needs the internet")
NA_HOROVOD = ("needs NGC's TensorFlow image with Horovod from nvcr.io (the internet); "
              "test_slurm_mpi.py runs MPI programs over PMIx instead")
NA_ENROOT = "drives enroot itself (enroot list, exec, remove, export)"
NA_NAME_FLAGS = ("--container-name=NAME:FLAG (exec, no_exec, create): fpull's --fpull-name has "
                 "no flags; a step always gets a container of its own on the name's tree")
NA_ATTACH_UNNAMED = ("joins another step's running, unnamed container by pyxis's JOB.STEP name: "
                     "fpull never joins another step's container")
NA_ENTRYPOINT_LOG = ("--container-entrypoint-log: fpull runs the Entrypoint as the task itself, "
                     "so its output is always the task's")
NA_WRITABLE = ("--container-writable: fpull's containers are writable unless --fpull-readonly, "
               "so there is no option to contradict it")
NA_DOCKERD = ("dockerd:// (a local Docker daemon's images): fpull pulls from registries and "
              "reads .sqsh files")
NA_PYTORCH = ("enroot's PyTorch hook (MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK): fpull has "
              "no such hook")

PART_APT = "runs the grep; its second half installs packages with apt-get (the internet)"

DF_HOME = ("with --fpull-remap-root the home is mounted at the job's HOME path, as without it, "
           "not at /root")
DF_UIDMAP = ("without --fpull-remap-root the task is in a user namespace nested in the "
             "container's (where 0 is the user), so /proc/self/uid_map reads UID 0 1; on the "
             "node the task is the user")
DF_ATTACH = ("--fpull-name never joins a running container: each step gets a container of its "
             "own on the name's tree (its files, not the mounts of a step still running); "
             "--fpull-mounts always applies")
DF_ENTRY_ENV = ("the Entrypoint sees the job's variables that the image does not set, without "
                "--fpull-env")
DF_SAVE = ("--fpull-save writes the image as pulled, not as the step left it, and only to an "
           "absolute path")
DF_WORKDIR = "--fpull-workdir must be an absolute path: a relative one is refused at submit"

# Ported steps that name a container name the image too (the name alone runs in an existing
# container, as pyxis's: "invalid arg: --container-name without --container-image").
NAMED = "later steps name the image too"

PYXIS = [
    ("concurrency.bats", "concurrent container creation", "ported", ""),
    ("concurrency.bats", "concurrent container reuse", "ported",
     "0.1 s apart, not 0 to 1 s; no :no_exec (fpull's only behaviour); the steps of one name "
     "run at once, each in a container of its own on the name's tree; " + NAMED),
    ("docker_image.bats", "Docker Hub ubuntu:12.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:14.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:16.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:18.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:20.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:22.04", "ported", ""),
    ("docker_image.bats", "Docker Hub ubuntu:24.04", "part", PART_APT),
    ("docker_image.bats", "Docker Hub ubuntu:26.04", "part", PART_APT),
    ("docker_image.bats", "Docker Hub docker.io/ubuntu:24.04", "ported",
     "REGISTRY/IMAGE and REGISTRY#IMAGE"),
    ("docker_image.bats", "Docker Hub centos:5", "ported", ""),
    ("docker_image.bats", "Docker Hub centos:6", "ported", ""),
    ("docker_image.bats", "Docker Hub centos:7", "ported", ""),
    ("docker_image.bats", "Docker Hub centos:8", "ported", ""),
    ("docker_image.bats", "nvcr.io PyTorch 20.02", "ported", ""),
    ("docker_image.bats", "nvcr.io PyTorch 22.04", "ported", ""),
    ("docker_image.bats", "gcr.io TensorFlow 2.9", "ported",
     "the host's python3.11 with a tensorflow package that has its version"),
    ("docker_image.bats", "gitlab.com NVIDIA device plugin", "ported", "a nested repository"),
    ("docker_image.bats", "nvcr.io NVIDIA device plugin", "ported", ""),
    ("docker_image.bats", "image download must be attempted once", "ported", "fpull's message"),
    ("docker_image.bats", "docker:// explicit import", "ported", ""),
    ("docker_image.bats", "dockerd:// import", "n/a", NA_DOCKERD),
    ("docker_image.bats", "Docker Hub rapidsai/devcontainers (zstd layers)", "ported", ""),
    ("entrypoint.bats", "--container-entrypoint: docker:dind", "ported", ""),
    ("entrypoint.bats", "manual execution of entrypoint", "ported", NAMED),
    ("entrypoint.bats", "--container-entrypoint and --container-env", "differs", DF_ENTRY_ENV),
    ("entrypoint.bats", "--container-entrypoint-log: nvidia/cuda", "n/a", NA_ENTRYPOINT_LOG),
    ("env.bats", "passthrough of environment variable", "ported", ""),
    ("env.bats", "$TERM special case", "ported", ""),
    ("env.bats", "$HOME special case", "differs", DF_HOME),
    ("env.bats", "$LANG special case", "ported", ""),
    ("env.bats", "nvidia/cuda:10.2-base with $NVIDIA_VISIBLE_DEVICES=0", "n/a", NA_GPU),
    ("env.bats", "ubuntu:18.04 with $NVIDIA_VISIBLE_DEVICES=all", "n/a", NA_GPU),
    ("env.bats", "ubuntu:18.04 with $NVIDIA_DRIVER_CAPABILITIES=utility,compute", "n/a", NA_GPU),
    ("env.bats", "--container-env overriding container variable", "ported", ""),
    ("env.bats", "--container-env forcing $LANG passthrough", "ported", ""),
] + [("env_vars.bats", "PYXIS_CONTAINER_%s" % n, "n/a", NA_ENV_VARS) for n in (
    "IMAGE environment variable", "IMAGE: command line precedence",
    "MOUNTS environment variable", "MOUNTS: command line precedence",
    "WORKDIR environment variable", "WORKDIR: command line precedence",
    "NAME environment variable", "NAME: command line precedence",
    "SAVE environment variable", "SAVE: command line precedence",
    "MOUNT_HOME=1 environment variable", "MOUNT_HOME=0 environment variable",
    "MOUNT_HOME: command line precedence",
    "REMAP_ROOT=1 environment variable", "REMAP_ROOT=0 environment variable",
    "REMAP_ROOT: command line precedence",
    "ENTRYPOINT=1 environment variable", "ENTRYPOINT=0 environment variable",
    "ENTRYPOINT: command line precedence",
    "ENTRYPOINT_LOG=1 environment variable", "ENTRYPOINT_LOG=0 environment variable",
    "WRITABLE=1 environment variable", "WRITABLE=0 environment variable",
    "WRITABLE: command line precedence",
    "READONLY=1 environment variable", "READONLY=0 environment variable",
    "READONLY: command line precedence",
    "ENV environment variable", "ENV: command line precedence")] + [
    ("exec.bats", "enroot exec", "n/a", NA_ENROOT),
    ("exec.bats", "attach to running container", "differs", DF_ATTACH),
    ("exec.bats", "attach to running unnamed container", "n/a", NA_ATTACH_UNNAMED),
    ("exec.bats", "attach to running container after directory change", "ported", ""),
    ("exec.bats", "attach to running container with --container--mounts", "differs", DF_ATTACH),
    ("exec.bats", "--container-name exec flag on stopped container", "n/a", NA_NAME_FLAGS),
    ("exec.bats", "--container-name no_exec flag on running container", "differs", DF_ATTACH),
    ("invalid_args.bats", "invalid arg: --container-image= (without argument)", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-image=<very long invalid image name>",
     "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-image=./", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-image=/dev/urandom", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-name without --container-image", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-name=/tmp/foo", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-name=:exec", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-name=<very long name>", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-mounts= (without argument)", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-mounts=:", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-mounts=/tmp:", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-workdir= (without argument)", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-readonly --container-writable", "n/a",
     NA_WRITABLE),
    ("invalid_args.bats", "invalid arg: --container-env= (without argument)", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-env trailing comma", "ported", ""),
    ("invalid_args.bats", "invalid arg: --container-save=<directory>", "ported", ""),
    ("mount_home.bats", "--container-mount-home --container-remap-root", "differs", DF_HOME),
    ("mount_home.bats", "--container-mount-home --no-container-remap-root", "ported", ""),
    ("mount_home.bats", "--no-container-mount-home --container-remap-root", "differs", DF_HOME),
    ("mount_home.bats", "--no-container-mount-home --no-container-remap-root", "ported", ""),
    ("mounts.bats", "--container-mounts absolute directory", "ported", ""),
    ("mounts.bats", "--container-mounts regular file", "ported", ""),
    ("mounts.bats", "--container-mounts character device file", "ported", ""),
    ("mounts.bats", "--container-mounts current working directory", "ported", ""),
    ("mounts.bats", "--container-mounts multiple entries", "ported", ""),
    ("mounts.bats", "--container-mounts /etc/shadow", "ported",
     "pyxis skips it as root; the steps here are nobody's"),
    ("mounts.bats", "--container-mounts read-only directory", "ported", ""),
    ("mounts.bats", "--container-mounts multiple flags: unbindable+ro", "ported", ""),
    ("mounts.bats", "--container-mounts path escape attempt", "ported",
     "refused at submit, in fpull's words"),
    ("mounts.bats", "--container-mounts short-form", "ported", ""),
    ("mounts.bats", "--container-mounts tmpfs", "ported", ""),
    ("mounts.bats", "--container-mounts tmpfs huge pages", "ported", ""),
    ("mounts.bats", "--container-mounts devpts", "ported", ""),
    ("mounts.bats", "--container-mounts invalid target", "ported", ""),
    ("mounts.bats", "--container-mounts space in source path", "ported", ""),
    ("mounts.bats", "--container-mounts space in destination path", "ported", ""),
    ("mounts.bats", "--container-mounts space in source and destination", "ported", ""),
    ("mounts.bats", "--container-mounts non-existent source path", "ported", "fpull's message"),
    ("mounts.bats", "--container-mounts non-existent source with valid mount", "ported",
     "fpull's message"),
    ("mounts.bats", "--container-mounts umount", "differs", DF_HOME),
    ("mpi.bats", "PMIx mount", "ported", ""),
    ("mpi.bats", "PMIx environment variables", "ported", ""),
    ("mpi.bats", "PMIx Horovod", "n/a", NA_HOROVOD),
    ("mpi.bats", "PMI2 file descriptor", "ported", ""),
    ("mpi.bats", "PMI2 environment variables", "ported", ""),
] + [("mpi4py.bats", "mpi4py: " + n, "n/a", NA_ARCHIVE) for n in (
    "ubuntu:20.04", "ubuntu:22.04", "ubuntu:24.04", "ubuntu:26.04",
    "nvcr.io/nvidia/pytorch:26.02-py3", "nvcr.io/nvidia/pytorch:26.03-py3")] + [
    ("name.bats", "unnamed container cleanup", "ported", ""),
    ("name.bats", "named container persistence", "ported",
     "apt-get install file: root writes /usr/bin/file (no archive here); " + NAMED),
    ("name.bats", "named container manual remove", "n/a", NA_ENROOT),
    ("name.bats", "--container-name create flag", "n/a", NA_NAME_FLAGS),
    ("name.bats", "container cleanup after job cancellation", "ported", ""),
    ("path.bats", "redis-server PATH resolution", "ported", ""),
    ("path.bats", "rabbitmq PATH resolution", "ported", ""),
    ("pytorch.bats", "nvcr.io PyTorch environment variables", "n/a", NA_PYTORCH),
    ("pytorch.bats", "Docker Hub PyTorch environment variables", "n/a", NA_PYTORCH),
    ("remap_root.bats", "--container-remap-root uid map", "ported", ""),
    ("remap_root.bats", "--no-container-remap-root uid map", "differs", DF_UIDMAP),
    ("remap_root.bats", "--container-remap-root seccomp", "ported", ""),
    ("remap_root.bats", "--no-container-remap-root seccomp", "ported", ""),
    ("remap_root.bats", "apt-get install file", "n/a", NA_ARCHIVE),
    ("remap_root.bats", "apt-get install emacs-nox", "n/a", NA_ARCHIVE),
    ("remap_root.bats", "yum install file", "n/a", NA_ARCHIVE),
    ("remap_root.bats", "yum install emacs-nox", "n/a", NA_ARCHIVE),
    ("squashfs_image.bats", "Ubuntu 24.04 squashfs", "ported",
     "enroot import is fpull pull --format squashfs"),
    ("squashfs_image.bats", "import - export - import", "n/a", NA_ENROOT),
    ("squashfs_image.bats", "--container-save absolute path", "differs", DF_SAVE),
    ("squashfs_image.bats", "--container-save relative path", "differs", DF_SAVE),
    ("squashfs_image.bats", "squashfs with --container-writable", "ported",
     "no flag: writable by default"),
    ("squashfs_image.bats", "squashfs with --container-mounts", "ported", ""),
    ("squashfs_image.bats", "squashfs with --container-workdir", "ported", ""),
    ("squashfs_image.bats", "squashfs with --no-container-remap-root", "ported", ""),
    ("squashfs_image.bats", "squashfs with multiple tasks", "ported", ""),
    ("squashfs_image.bats", "squashfs concurrent access", "ported", ""),
    ("squashfs_image.bats", "squashfs container cleanup", "ported", ""),
    ("squashfs_image.bats", "squashfs nonexistent file", "ported", ""),
    ("ssh.bats", "ssh to container running sshd", "n/a", NA_ARCHIVE),
    ("ssh.bats", "attach to container running sshd", "n/a", NA_ARCHIVE),
    ("unshare.bats", "--container-unshare=foo", "n/a", NA_UNSHARE),
    ("unshare.bats", "--container-unshare=net,foo", "n/a", NA_UNSHARE),
    ("unshare.bats", "--container-unshare=net,ipc,uts unshares all three", "n/a", NA_UNSHARE),
    ("unshare.bats", "PYXIS_CONTAINER_UNSHARE=net env var", "n/a", NA_UNSHARE),
    ("unshare_ipc.bats", "--container-unshare=ipc creates new ipcns", "n/a", NA_UNSHARE),
    ("unshare_ipc.bats", "--container-unshare=ipc: multiple tasks", "n/a", NA_UNSHARE),
    ("unshare_ipc.bats", "--container-unshare=ipc isolates SysV shared memory", "n/a",
     NA_UNSHARE),
    ("unshare_ipc.bats", "--container-unshare=ipc uses private /dev, /dev/shm and /dev/mqueue",
     "n/a", NA_UNSHARE),
    ("unshare_ipc.bats", "no --container-unshare shares host ipcns", "ported", ""),
    ("unshare_ipc.bats", "--container-name joins existing ipcns container", "n/a", NA_UNSHARE),
    ("unshare_ipc.bats", "--container-unshare=ipc on existing container without ipcns", "n/a",
     NA_UNSHARE),
    ("unshare_net.bats", "--container-unshare=net creates new netns", "n/a", NA_UNSHARE),
    ("unshare_net.bats", "--container-unshare=net: multiple tasks", "n/a", NA_UNSHARE),
    ("unshare_net.bats", "--container-unshare=net loopback check", "n/a", NA_UNSHARE),
    ("unshare_net.bats", "--container-unshare=net external network check", "n/a", NA_UNSHARE),
    ("unshare_net.bats", "no --container-unshare shares host netns", "ported", ""),
    ("unshare_net.bats", "--container-name joins existing netns container", "n/a", NA_UNSHARE),
    ("unshare_net.bats", "--container-unshare=net on existing container without netns", "n/a",
     NA_UNSHARE),
    ("unshare_uts.bats", "--container-unshare=uts creates new utsns", "n/a", NA_UNSHARE),
    ("unshare_uts.bats", "--container-unshare=uts: multiple tasks", "n/a", NA_UNSHARE),
    ("unshare_uts.bats", "--container-unshare=uts isolates sethostname", "n/a", NA_UNSHARE),
    ("unshare_uts.bats", "no --container-unshare shares host utsns", "ported", ""),
    ("unshare_uts.bats", "--container-name joins existing utsns container", "n/a", NA_UNSHARE),
    ("unshare_uts.bats", "--container-unshare=uts on existing container without utsns", "n/a",
     NA_UNSHARE),
    ("workdir.bats", "--container-workdir absolute target", "ported", ""),
    ("workdir.bats", "--container-workdir path escape attempt", "differs", DF_WORKDIR),
    ("workdir.bats", "--container-workdir target doesn't exist", "ported", ""),
    ("workdir.bats", "container image workdir", "ported", ""),
    ("writable.bats", "--container-readonly", "ported", ""),
    ("writable.bats", "--container-writable", "ported", "no flag: writable by default"),
    ("sbatch.bats", "sbatch ubuntu:16.04", "ported", ""),
    ("sbatch.bats", "sbatch centos:8", "ported", ""),
]
KINDS = ("ported", "part", "differs", "gap", "n/a")
# The test method that runs each file's cases (files not named: test_ + the file's stem).
METHOD = {"unshare_ipc.bats": "test_unshare", "unshare_net.bats": "test_unshare",
          "unshare_uts.bats": "test_unshare"}


def method_of(bats):
    return METHOD.get(bats, "test_" + bats[:-len(".bats")])


CASES = {}


def port(bats, name):
    """Registers the function as the case that runs pyxis's BATS test NAME."""
    def register(fn):
        if (bats, name) in CASES:
            raise ValueError("two cases for %s: %s" % (bats, name))
        CASES[(bats, name)] = fn
        return fn
    return register


# -- the images, built here -----------------------------------------------------------------
TOOLS = ("/bin/sh", "/usr/bin/bash", "/usr/bin/cat", "/usr/bin/grep", "/usr/bin/findmnt",
         "/usr/bin/id", "/usr/bin/pwd", "/usr/bin/touch", "/usr/bin/mkdir", "/usr/bin/ls",
         "/usr/bin/readlink", "/usr/bin/realpath", "/usr/bin/sleep", "/usr/bin/true",
         "/usr/bin/env", "/usr/bin/echo", "/usr/bin/hostname", "/usr/bin/which",
         "/usr/bin/md5sum", "/usr/bin/mount", "/usr/bin/sed", "/usr/bin/chmod")
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

UBUNTU = {"12.04": ("Ubuntu precise (12.04.5 LTS)", "12.04.5 LTS, Precise Pangolin"),
          "14.04": ("Ubuntu 14.04.6 LTS", "14.04.6 LTS, Trusty Tahr"),
          "16.04": ("Ubuntu 16.04.7 LTS", "16.04.7 LTS (Xenial Xerus)"),
          "18.04": ("Ubuntu 18.04.6 LTS", "18.04.6 LTS (Bionic Beaver)"),
          "20.04": ("Ubuntu 20.04.6 LTS", "20.04.6 LTS (Focal Fossa)"),
          "22.04": ("Ubuntu 22.04.5 LTS", "22.04.5 LTS (Jammy Jellyfish)"),
          "24.04": ("Ubuntu 24.04.2 LTS", "24.04.2 LTS (Noble Numbat)"),
          "26.04": ("Ubuntu Resolute Raccoon (development branch)", "26.04 (Resolute Raccoon)")}
CENTOS = {"5": "CentOS release 5.11 (Final)", "6": "CentOS release 6.10 (Final)",
          "7": "CentOS Linux release 7.9.2009 (Core)", "8": "CentOS Linux release 8.4.2105"}

# docker:dind's docker-entrypoint.sh, in short: DOCKER_HOST from DOCKER_TLS_VERIFY.
DIND_ENTRYPOINT = """#!/bin/sh
if [ -z "$DOCKER_HOST" ]; then
  if [ -n "$DOCKER_TLS_VERIFY" ]; then
    export DOCKER_HOST=tcp://docker:2376
  else
    export DOCKER_HOST=tcp://docker:2375
  fi
fi
exec "$@"
"""
# nginx's docker-entrypoint.sh and its 10-listen-on-ipv6-by-default.sh, in short.
NGINX_ENTRYPOINT = """#!/bin/sh
for f in /docker-entrypoint.d/*.sh; do "$f"; done
exec "$@"
"""
NGINX_IPV6 = """#!/bin/sh
sed -i 's/^    listen       80;$/    listen       80;\\n    listen  [::]:80;/' \\
    /etc/nginx/conf.d/default.conf
"""
NGINX_CONF = "server {\n    listen       80;\n    server_name  localhost;\n}\n"

_tools = {}


def _tools_blob(compression):
    """The tools layer (the same for every image), compressed once per process."""
    if compression not in _tools:
        raw = _tools.get(None) or images.tar_layer(tools_layer(TOOLS))
        _tools[None] = raw
        _tools[compression] = {"blob": images.compress(raw, compression), "uncompressed": raw,
                               "compression": compression}
    return _tools[compression]


def _ubuntu(version):
    pretty, full = UBUNTU[version]
    return ('NAME="Ubuntu"\nVERSION="%s"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME="%s"\n'
            'VERSION_ID="%s"\n' % (full, pretty, version))


def _python_layer():
    """The host's python3.11 with the few modules it reads as it starts, and a tensorflow
    package that has its version."""
    lib = "/usr/lib/python3.11"
    entries = []
    for n in ("os.py", "encodings/__init__.py", "encodings/aliases.py", "encodings/utf_8.py"):
        with open(os.path.join(lib, n), "rb") as f:
            entries.append({"path": lib.lstrip("/") + "/" + n, "data": f.read()})
    return entries + [
        {"path": lib.lstrip("/") + "/lib-dynload", "type": "dir"},
        {"path": "usr/bin/python", "type": "symlink", "target": "python3.11"},
        {"path": "usr/lib/python3/dist-packages/tensorflow/__init__.py",
         "data": "__version__ = '2.9.3'\n"}] + tools_layer(["/usr/bin/python3.11"])


def image_spec(name, t):
    """(extra layers, config, compression) of the image NAME stands in for; t: the test
    (where a spec keeps what the check needs, such as a file's md5)."""
    base = [{"path": "usr/local/bin", "type": "dir"}, {"path": "var", "type": "dir"}]
    cfg = {"Env": [PATH]}
    repo, _, tag = name.partition(":")
    if repo == "ubuntu" and tag in UBUNTU:
        layers = [base + [{"path": "etc/os-release", "data": _ubuntu(tag)}]]
        if tag == "22.04":
            layers.append(tools_layer(["/usr/bin/perl"]))
        return layers, cfg, "gzip"
    if repo == "centos":
        return [base + [{"path": "etc/redhat-release", "data": CENTOS[tag] + "\n"},
                        {"path": "etc/os-release", "data": 'NAME="CentOS Linux"\n'}]], cfg, "gzip"
    if repo == "nvidia/pytorch":
        version = {"20.02-py3": "1.5.0a0+3bbb36e", "22.04-py3": "1.12.0a0+bd13bc6"}[tag]
        return ([base + [{"path": "workspace", "type": "dir"},
                         {"path": "etc/os-release", "data": _ubuntu("18.04")}]],
                {"Env": [PATH, "PYTORCH_VERSION=" + version], "WorkingDir": "/workspace"}, "gzip")
    if repo == "deeplearning-platform-release/tf-cpu.2-9":
        return ([base + [{"path": "entrypoint.sh", "mode": 0o755,
                          "data": '#!/bin/bash\nexec "$@"\n'}], _python_layer()], cfg, "gzip")
    if repo.endswith("k8s-device-plugin"):
        data = os.urandom(100000)
        t.md5[name] = hashlib.md5(data).hexdigest()
        return [base + [{"path": "usr/bin/nvidia-device-plugin", "mode": 0o755,
                         "data": data}]], cfg, "gzip"
    if repo == "nvidia/cuda":
        return ([base + [{"path": "etc/os-release", "data": _ubuntu(tag[-5:])}]],
                {"Env": [PATH, "CUDA_VERSION=11.8.0",
                         "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64"]}, "gzip")
    if repo == "rapidsai/devcontainers":
        return [base + [{"path": "etc/os-release", "data": _ubuntu("24.04")}]], cfg, "zstd"
    if repo == "docker":
        return ([base + [{"path": "usr/local/bin/docker-entrypoint.sh", "mode": 0o755,
                          "data": DIND_ENTRYPOINT}]],
                {"Env": [PATH], "Entrypoint": ["docker-entrypoint.sh"], "Cmd": ["sh"]}, "gzip")
    if repo == "nginx":
        return ([base + [{"path": "docker-entrypoint.sh", "mode": 0o755, "data": NGINX_ENTRYPOINT},
                         {"path": "docker-entrypoint.d/10-listen-on-ipv6-by-default.sh",
                          "mode": 0o755, "data": NGINX_IPV6},
                         {"path": "etc/nginx/conf.d/default.conf", "data": NGINX_CONF},
                         {"path": "usr/sbin/nginx", "mode": 0o755,
                          "data": '#!/bin/sh\necho "nginx version: nginx/1.19.1" >&2\n'}]],
                {"Env": [PATH], "Entrypoint": ["/docker-entrypoint.sh"],
                 "Cmd": ["nginx", "-g", "daemon off;"]}, "gzip")
    if repo in ("redis", "rabbitmq"):
        prog = {"redis": "redis-server", "rabbitmq": "rabbitmqctl"}[repo]
        return ([base + [{"path": "usr/local/bin/" + prog, "mode": 0o755,
                          "data": "#!/bin/sh\necho '%s'\n" % image_says(name)}]], cfg, "gzip")
    raise KeyError(name)


def image_says(name):
    """What the program of redis:5.0.8 and rabbitmq:3.8.3 prints: its name and version."""
    return {"redis:5.0.8": "Redis server v=5.0.8 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64",
            "rabbitmq:3.8.3": "3.8.3"}[name]


class Result:
    def __init__(self, cp):
        self.rc = cp.returncode
        self.stdout = cp.stdout
        self.stderr = cp.stderr
        # bats's $output: both streams; $lines[-1]: here the last line the task printed.
        self.output = cp.stdout + cp.stderr
        self.lines = cp.stdout.splitlines()

    def last(self):
        return self.lines[-1] if self.lines else ""

    def __str__(self):
        return "exit %d\n--- stdout\n%s--- stderr\n%s" % (self.rc, self.stdout, self.stderr)


class PyxisSuite(SlurmCase):
    """One cluster per method, its cases in one allocation as pyxis's suite runs."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.home = os.path.join(self.tmp, "home")
        self.work = os.path.join(self.tmp, "work")
        self.shared = os.path.join(self.tmp, "shared")
        for d, mode in ((self.home, 0o700), (self.work, 0o755), (self.shared, 0o777)):
            os.mkdir(d)
            os.chmod(d, mode)
            shutil.chown(d, "nobody", None)
        self.md5 = {}
        self.pushed = {}
        self.images_pushed = {}
        self.job = None
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=[
            "run_dir=" + self.run_dir, "config=" + self.config, "data_dir=" + DATA_DIR,
            "fpull=" + fpull.binary()])
        self.t0 = time.monotonic()

    def tearDown(self):
        print("%s: %.1f s" % (self._testMethodName, time.monotonic() - self.t0))

    # -- images and steps ------------------------------------------------------------------
    def image(self, name, sep="/"):
        """REGISTRY/NAME (or REGISTRY#NAME) of the image NAME stands in for, pushed on first
        use; rapidsai/devcontainers is pushed by digest only (NAME is then repo@digest)."""
        if name not in self.pushed:
            layers, cfg, comp = image_spec(name, self)
            repo, _, tag = name.partition(":")
            blobs = [_tools_blob(comp)] + [images.tar_layer(layer) for layer in layers]
            img = images.push_image(self.client, repo, tag or None, blobs, compression=comp,
                                    config_extra={"config": cfg})
            self.pushed[name] = (repo + "@" + img["digest"]) if not tag else name
            self.images_pushed[name] = img
        return self.reg.hostport + sep + self.pushed[name]

    def allocation(self):
        """The job every step runs in (salloc --no-shell, as nobody)."""
        if self.job is None:
            cp = self.cluster._cmd(["salloc", "--no-shell", "-N1", "-J", "pyxis"], check=False,
                                   user="nobody")
            m = re.search(r"Granted job allocation (\d+)", cp.stderr)
            self.assertIsNotNone(m, cp.stderr + self.cluster.logs())
            self.job = m.group(1)
            self.addCleanup(self.cluster._cmd, ["scancel", self.job], check=False)
        return self.job

    def argv(self, args, env):
        """runuser ... env ... srun -N1 --oversubscribe ARGS, as pyxis's run_srun, in the
        allocation, as nobody with a home of its own."""
        # PWD as a shell in the work directory has it (a relative .sqsh path is read there).
        e = ["HOME=" + self.home, "PWD=" + self.work, "SLURM_JOB_ID=" + self.allocation()]
        unset = []
        for k, v in (env or {}).items():
            if v is None:
                unset += ["-u", k]
            else:
                e.append("%s=%s" % (k, v))
        return ["runuser", "-u", "nobody", "--", "env"] + unset + e + [
            "srun", "-N1", "--oversubscribe"] + list(args)

    def env(self):
        e = self.cluster.env()
        # The job's environment is the test's: nothing of the machine's locale or of fpull's
        # own test settings.
        for k in list(e):
            if k.startswith(("LC_", "FPULL_", "DOCKER_")) or k in ("LANG", "LANGUAGE"):
                del e[k]
        return e

    def srun(self, *args, env=None, timeout=180):
        cp = subprocess.run(self.argv(args, env), env=self.env(), cwd=self.work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=timeout)
        return Result(cp)

    def srun_ok(self, *args, env=None):
        r = self.srun(*args, env=env)
        self.assertEqual(r.rc, 0, "srun %s: %s" % (" ".join(args), r))
        return r

    def srun_fails(self, *args, env=None):
        r = self.srun(*args, env=env)
        self.assertNotEqual(r.rc, 0, "srun %s: %s" % (" ".join(args), r))
        return r

    def srun_bg(self, *args, env=None):
        p = subprocess.Popen(self.argv(args, env), env=self.env(), cwd=self.work,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.addCleanup(self.kill, p)
        return p

    def kill(self, p):
        """Ends srun P (and runuser above it) if it still runs."""
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()

    def finish(self, p, timeout=120):
        """P's Result once it ended, or None when it has not within TIMEOUT seconds (then it
        is ended)."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(p)
            return None
        return Result(subprocess.CompletedProcess(p.args, p.returncode, out, err))

    def wait_for(self, path, p=None, timeout=60):
        """Until PATH exists (a step in the background says it is up), or its srun P ended."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if p is not None and p.poll() is not None:
                self.fail("the step ended before %s: %s" % (path, self.finish(p, timeout=5)))
            if time.monotonic() > deadline:
                self.fail("no %s after %d s" % (path, timeout))
            time.sleep(0.1)

    def shared_mount(self):
        return "--fpull-mounts=%s:/shared" % self.shared

    def expect(self, cond, what):
        """pyxis's expectation that a gap breaks: the failure a gap case must keep showing."""
        if not cond:
            raise AssertionError("pyxis expects: " + what)

    def step_trees(self):
        """The steps' trees in the job's directory (not its cache or named containers)."""
        d = os.path.join(self.run_dir, self.allocation())
        return sorted(n for n in os.listdir(d) if n.isdigit()) if os.path.isdir(d) else []

    def trees_gone(self, steps, timeout=5):
        deadline = time.monotonic() + timeout
        while set(steps) & set(self.step_trees()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return not set(steps) & set(self.step_trees())

    # -- running a file's cases ------------------------------------------------------------
    def run_cases(self):
        ran, want = [], []
        for bats, name, kind, why in PYXIS:
            if method_of(bats) != self._testMethodName or kind == "n/a":
                continue
            want.append((bats, name))
            fn = CASES.get((bats, name))
            with self.subTest(pyxis="%s: %s" % (bats, name)):
                self.assertIsNotNone(fn, "no case runs it")
                ran.append((bats, name))
                t = time.monotonic()
                if kind != "gap":
                    fn(self)
                else:
                    try:
                        fn(self)
                    except AssertionError as ex:
                        if not str(ex).startswith("pyxis expects: "):
                            raise
                        print("%s: %s: fails as %s says: %s" % (bats, name, why[:2], ex))
                    else:
                        self.fail("%s is closed: this case passes; mark it ported (differs "
                                  "where the case's comment says so)" % why[:2])
                print("%s: %s: %.1f s" % (bats, name, time.monotonic() - t))
        self.assertTrue(want, "no file of pyxis's is this method's")
        self.assertEqual(ran, want)

    def test_concurrency(self):
        self.run_cases()

    def test_docker_image(self):
        self.run_cases()

    def test_entrypoint(self):
        self.run_cases()

    def test_env(self):
        self.run_cases()

    def test_exec(self):
        self.run_cases()

    def test_invalid_args(self):
        self.run_cases()

    def test_mount_home(self):
        self.run_cases()

    def test_mounts(self):
        self.run_cases()

    def test_mpi(self):
        self.run_cases()

    def test_name(self):
        self.run_cases()

    def test_path(self):
        self.run_cases()

    def test_remap_root(self):
        self.run_cases()

    def test_squashfs_image(self):
        self.run_cases()

    def test_unshare(self):
        self.run_cases()

    def test_workdir(self):
        self.run_cases()

    def test_writable(self):
        self.run_cases()

    def test_sbatch(self):
        """The batch script itself runs in the image (sbatch --fpull-image, or the script's
        #SBATCH line), as pyxis runs it."""
        self.run_cases()


# -- concurrency.bats -----------------------------------------------------------------------
@port("concurrency.bats", "concurrent container creation")
def _(t):
    ps = [t.srun_bg("-n1", "--overlap", "--fpull-image=" + t.image("ubuntu:24.04"),
                    "--fpull-name=concurrent-test-%d" % i, "sleep", "2") for i in range(5)]
    for p in ps:
        r = t.finish(p)
        t.assertIsNotNone(r)
        t.assertEqual(r.rc, 0, str(r))


@port("concurrency.bats", "concurrent container reuse")
def _(t):
    # pyxis: 50 steps of 1 s, 0 to 1 s apart (about 25 s); here 0.1 s apart.
    img = "--fpull-image=" + t.image("ubuntu:24.04")
    for i in range(5):
        t.srun_ok(img, "--fpull-name=reuse-test-%d" % i, "true")
    ps = []
    for i in range(1, 51):
        ps.append((i % 5, t.srun_bg("-n1", "--overlap", img,
                                    "--fpull-name=reuse-test-%d" % (i % 5), "sleep", "1")))
        time.sleep(0.1)
    for n, p in ps:
        r = t.finish(p)
        t.assertIsNotNone(r)
        t.assertEqual(r.rc, 0, str(r))
        # Each ran the container the name keeps (no pull, no new tree).
        t.assertRegex(r.stderr, r"container reuse-test-%d \(sha256:[0-9a-f]{64}\) as the "
                                r"job's earlier steps left it" % n)


# -- docker_image.bats ----------------------------------------------------------------------
def _grep_os_release(image, want, path="/etc/os-release"):
    def case(t):
        r = t.srun_ok("--fpull-image=" + t.image(image), "grep", want, path)
        t.assertIn(want, r.stdout)
    return case


for _v, _want in (("12.04", "Ubuntu precise"), ("14.04", "Ubuntu 14.04"),
                  ("16.04", "Ubuntu 16.04"), ("18.04", "Ubuntu 18.04"), ("20.04", "Ubuntu 20.04"),
                  ("22.04", "Ubuntu 22.04"), ("24.04", "Ubuntu 24.04"),
                  ("26.04", "Resolute Raccoon")):
    port("docker_image.bats", "Docker Hub ubuntu:" + _v)(_grep_os_release("ubuntu:" + _v, _want))
for _v, _want in (("5", "CentOS release 5.11 (Final)"), ("6", "CentOS release 6.10 (Final)"),
                  ("7", "CentOS Linux release 7."), ("8", "CentOS Linux release 8.")):
    port("docker_image.bats", "Docker Hub centos:" + _v)(
        _grep_os_release("centos:" + _v, _want, "/etc/redhat-release"))


@port("docker_image.bats", "Docker Hub docker.io/ubuntu:24.04")
def _(t):
    for sep in ("/", "#"):
        r = t.srun_ok("--fpull-image=" + t.image("ubuntu:24.04", sep), "grep", "Ubuntu 24.04",
                      "/etc/os-release")
        t.assertIn("Ubuntu 24.04", r.stdout)


def _pytorch_version(tag, want):
    def case(t):
        r = t.srun_ok("--fpull-image=" + t.image("nvidia/pytorch:" + tag, "#"), "sh", "-c",
                      "echo $PYTORCH_VERSION")
        t.assertEqual(r.last(), want, str(r))
    return case


port("docker_image.bats", "nvcr.io PyTorch 20.02")(
    _pytorch_version("20.02-py3", "1.5.0a0+3bbb36e"))
port("docker_image.bats", "nvcr.io PyTorch 22.04")(
    _pytorch_version("22.04-py3", "1.12.0a0+bd13bc6"))


@port("docker_image.bats", "gcr.io TensorFlow 2.9")
def _(t):
    r = t.srun_ok("--no-fpull-mount-home",
                  "--fpull-image=" + t.image("deeplearning-platform-release/tf-cpu.2-9", "#"),
                  "/entrypoint.sh", "python", "-c",
                  "import tensorflow; print(tensorflow.__version__)")
    t.assertRegex(r.last(), r"^2\.9\.", str(r))


def _md5(image):
    def case(t):
        ref = t.image(image, "#")
        r = t.srun_ok("--fpull-image=" + ref, "md5sum", "/usr/bin/nvidia-device-plugin")
        t.assertEqual(r.last(), "%s  /usr/bin/nvidia-device-plugin" % t.md5[image], str(r))
    return case


port("docker_image.bats", "gitlab.com NVIDIA device plugin")(
    _md5("nvidia/kubernetes/device-plugin/k8s-device-plugin:1.0.0-beta4"))
port("docker_image.bats", "nvcr.io NVIDIA device plugin")(
    _md5("nvidia/k8s-device-plugin:v0.11.0"))


@port("docker_image.bats", "image download must be attempted once")
def _(t):
    missing = t.reg.hostport + "/thisimagedoesntexist"
    r = t.srun_fails("--ntasks=2", "-O", "--fpull-image=" + missing, "true")
    attempts = [ln for ln in r.output.splitlines()
                if ln.startswith("fpull: ") and "not found" in ln]
    t.assertEqual(len(attempts), 1, str(r))
    t.assertIn(on_node("fpull: %s:latest: manifest latest not found" % missing), attempts[0])


@port("docker_image.bats", "docker:// explicit import")
def _(t):
    r = t.srun_ok("--fpull-image=docker://" + t.image("nvidia/cuda:11.8.0-base-ubuntu20.04"),
                  "grep", "Ubuntu 20.04", "/etc/os-release")
    t.assertIn("Ubuntu 20.04", r.stdout)


@port("docker_image.bats", "Docker Hub rapidsai/devcontainers (zstd layers)")
def _(t):
    ref = t.image("rapidsai/devcontainers")
    layers = t.images_pushed["rapidsai/devcontainers"]["layers"]
    t.assertEqual({lay["media_type"] for lay in layers}, {images.OCI_LAYER["zstd"]})
    t.assertRegex(ref, r"@sha256:[0-9a-f]{64}$")
    r = t.srun_ok("--fpull-image=" + ref, "grep", "Ubuntu 24.04", "/etc/os-release")
    t.assertIn("Ubuntu 24.04", r.stdout)


# -- entrypoint.bats ------------------------------------------------------------------------
DIND = "docker:26.1.0-dind-rootless"


@port("entrypoint.bats", "--container-entrypoint: docker:dind")
def _(t):
    img = "--fpull-image=" + t.image(DIND)
    t.srun_ok(img, "--fpull-entrypoint", "sh", "-c", '[ -n "${DOCKER_HOST}" ]')
    t.srun_ok(img, "--no-fpull-entrypoint", "sh", "-c", '[ -z "${DOCKER_HOST}" ]')


@port("entrypoint.bats", "manual execution of entrypoint")
def _(t):
    img = "--fpull-image=" + t.image("nginx:1.19.1")
    t.srun_ok(img, "--fpull-name=nginx-test", "--fpull-remap-root", "nginx", "-v")
    r = t.srun_ok(img, "--fpull-name=nginx-test", "cat", "/etc/nginx/conf.d/default.conf")
    t.assertIn("listen       80;", r.output)
    t.assertNotIn("listen  [::]:80;", r.output)
    t.srun_ok(img, "--fpull-name=nginx-test", "--fpull-remap-root", "/docker-entrypoint.sh",
              "nginx", "-v")
    r = t.srun_ok(img, "--fpull-name=nginx-test", "cat", "/etc/nginx/conf.d/default.conf")
    t.assertIn("listen  [::]:80;", r.output)


@port("entrypoint.bats", "--container-entrypoint and --container-env")
def _(t):
    img = "--fpull-image=" + t.image(DIND)
    echo = ["sh", "-c", "echo ${DOCKER_HOST}"]
    r = t.srun_ok(img, "--fpull-entrypoint", *echo)
    t.assertEqual(r.last(), "tcp://docker:2375")
    # pyxis: without --container-env the Entrypoint does not see DOCKER_TLS_VERIFY (2375);
    # fpull: the job's variables the image does not set are the Entrypoint's too.
    r = t.srun_ok(img, "--fpull-entrypoint", *echo, env={"DOCKER_TLS_VERIFY": "1"})
    t.assertEqual(r.last(), "tcp://docker:2376")
    r = t.srun_ok(img, "--fpull-entrypoint", "--fpull-env=DOCKER_TLS_VERIFY", *echo,
                  env={"DOCKER_TLS_VERIFY": "1"})
    t.assertEqual(r.last(), "tcp://docker:2376")


# -- env.bats -------------------------------------------------------------------------------
@port("env.bats", "passthrough of environment variable")
def _(t):
    r = t.srun_ok("--fpull-image=" + t.image("ubuntu:18.04"), "sh", "-c", "echo $FOO",
                  env={"FOO": "bar"})
    t.assertEqual(r.last(), "bar")


@port("env.bats", "$TERM special case")
def _(t):
    r = t.srun_ok("--no-fpull-mount-home", "--fpull-image=" + t.image("ubuntu:18.04"), "sh", "-c",
                  "echo $TERM", env={"TERM": "dumb"})
    t.assertEqual(r.last(), "dumb")


@port("env.bats", "$HOME special case")
def _(t):
    # pyxis mounts HOME=/tmp at /root, the remapped root's home; fpull at $HOME.
    r = t.srun_ok("--fpull-mount-home", "--fpull-remap-root",
                  "--fpull-image=" + t.image("ubuntu:18.04"), "sh", "-c",
                  'findmnt -n -o SOURCE "$HOME"; findmnt /root >/dev/null || echo no-root-mount',
                  env={"HOME": "/tmp"})
    t.assertEqual(r.last(), "no-root-mount", str(r))
    t.assertTrue("/tmp" in r.lines[-2] or "tmpfs" in r.lines[-2], str(r))


@port("env.bats", "$LANG special case")
def _(t):
    r = t.srun_ok("--fpull-image=" + t.image("ubuntu:22.04"), "--no-fpull-mount-home", "perl",
                  "--version", env={"LANG": "en_US.UTF-8"})
    t.assertIn("This is perl 5", r.stdout)
    t.expect("Setting locale failed" not in r.output, "no 'Setting locale failed': " + str(r))


@port("env.bats", "--container-env overriding container variable")
def _(t):
    img = ["--no-fpull-mount-home",
           "--fpull-image=" + t.image("nvidia/cuda:11.8.0-base-ubuntu22.04")]
    job = {"CUDA_VERSION": "12.0.0", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    # An unset variable named by --fpull-env does not override the image's.
    r = t.srun_ok(*img, "--fpull-env", "CUDA_VERSION", "sh", "-c", "echo $CUDA_VERSION",
                  env={"CUDA_VERSION": None})
    t.assertEqual(r.last(), "11.8.0")
    r = t.srun_ok(*img, "sh", "-c", "echo $CUDA_VERSION", env=job)
    t.assertEqual(r.last(), "11.8.0")
    r = t.srun_ok(*img, "sh", "-c", "echo $LD_LIBRARY_PATH", env=job)
    t.assertEqual(r.last(), "/usr/local/nvidia/lib:/usr/local/nvidia/lib64")
    r = t.srun_ok(*img, "--fpull-env", "CUDA_VERSION", "sh", "-c", "echo $CUDA_VERSION", env=job)
    t.assertEqual(r.last(), "12.0.0")
    for names in ("CUDA_VERSION,LD_LIBRARY_PATH", "LD_LIBRARY_PATH,CUDA_VERSION"):
        r = t.srun_ok(*img, "--fpull-env", names, "sh", "-c", "echo $LD_LIBRARY_PATH", env=job)
        t.assertEqual(r.last(), "/usr/local/cuda/lib64", names)


@port("env.bats", "--container-env forcing $LANG passthrough")
def _(t):
    r = t.srun_ok("--fpull-image=" + t.image("ubuntu:22.04"), "--fpull-env", "LANG",
                  "--no-fpull-mount-home", "perl", "--version", env={"LANG": "en_US.UTF-8"})
    t.assertIn("Setting locale failed", r.output)


# -- exec.bats ------------------------------------------------------------------------------
# "attach to running container after directory change" is ported; the other three differ
# (DF_ATTACH): a step never joins another's running container.
def _while_running(t, name, first, second, script="true"):
    """pyxis's pattern: a step in container NAME runs SCRIPT and stays (pyxis: sleep 30 s,
    then the test sleeps 5 s; here until the test says go), and a second step with
    --overlap and the arguments SECOND runs meanwhile. The second's Result."""
    up = os.path.join(t.shared, name + ".up")
    go = os.path.join(t.shared, name + ".go")
    p = t.srun_bg("--fpull-image=" + t.image("ubuntu:20.04"), "--fpull-name=" + name,
                  t.shared_mount(), *first, "bash", "-c",
                  "%s && touch /shared/%s.up && while [ ! -e /shared/%s.go ]; do sleep 0.1; "
                  "done" % (script, name, name))
    t.wait_for(up, p)
    try:
        q = t.srun_bg("--overlap", "--fpull-image=" + t.image("ubuntu:20.04"),
                      "--fpull-name=" + name, *second)
        r = t.finish(q, timeout=10)
    finally:
        open(go, "w").close()
        first_r = t.finish(p)
    t.assertIsNotNone(first_r)
    t.assertEqual(first_r.rc, 0, str(first_r))
    t.expect(r is not None, "a step runs in container %s while another step runs in it (this "
                            "one waited 10 s)" % name)
    return r


@port("exec.bats", "attach to running container")
def _(t):
    t.srun_ok("--fpull-image=" + t.image("ubuntu:20.04"), "--fpull-name=exec-test", "mkdir",
              "/mymnt")
    # pyxis: the step joins the running container and sees its tmpfs. fpull: a container
    # of its own on the name's tree: /mymnt is there, the other step's mount is not.
    r = _while_running(t, "exec-test", ["--fpull-remap-root"],
                       ["bash", "-c", "ls -d /mymnt; findmnt /mymnt || echo not-mounted"],
                       script="mount -t tmpfs none /mymnt && findmnt /mymnt")
    t.assertEqual((r.rc, r.lines), (0, ["/mymnt", "not-mounted"]), str(r))


@port("exec.bats", "attach to running container after directory change")
def _(t):
    r = _while_running(t, "exec-test2", [], ["pwd"], script="cd /var")
    t.assertEqual((r.rc, r.last()), (0, "/"), str(r))


@port("exec.bats", "attach to running container with --container--mounts")
def _(t):
    # pyxis ignores --container-mounts when it attaches; fpull's step mounts it.
    r = _while_running(t, "exec-test3", [],
                       ["--fpull-mounts", "/tmp:/mnt/pyxis_test", "bash", "-c",
                        '[ -d "/mnt/pyxis_test" ] && findmnt /mnt/pyxis_test'])
    t.assertEqual(r.rc, 0, str(r))
    t.assertNotIn("ignoring", r.output)


@port("exec.bats", "--container-name no_exec flag on running container")
def _(t):
    t.srun_ok("--fpull-image=" + t.image("ubuntu:20.04"), "--fpull-name=exec-test4", "mkdir",
              "/mymnt")
    # What pyxis's :no_exec asks for is what fpull's --fpull-name always does.
    r = _while_running(t, "exec-test4", ["--fpull-remap-root"],
                       ["bash", "-c", "[ -d /mymnt ] && ! findmnt /mymnt"],
                       script="mount -t tmpfs none /mymnt && findmnt /mymnt")
    t.assertEqual(r.rc, 0, str(r))


# -- invalid_args.bats ----------------------------------------------------------------------
def _invalid(*args):
    def case(t):
        t.srun_fails(*[a.replace("IMAGE", t.image("ubuntu:18.04")) for a in args])
    return case


for _name, _args in (
        ("--container-image= (without argument)", ("--fpull-image=", "true")),
        ("--container-image=./", ("--fpull-image=./", "true")),
        ("--container-image=/dev/urandom", ("--fpull-image=/dev/urandom", "true")),
        ("--container-name=/tmp/foo", ("--fpull-name=/tmp/foo", "--fpull-image=IMAGE", "true")),
        ("--container-name=:exec", ("--fpull-name=:attach", "--fpull-image=IMAGE", "true")),
        ("--container-name=<very long name>",
         ("--fpull-name=" + "a" * 300, "--fpull-image=IMAGE", "true")),
        ("--container-mounts= (without argument)",
         ("--fpull-mounts=", "--fpull-image=IMAGE", "findmnt", "/foo")),
        ("--container-mounts=:", ("--fpull-mounts=:", "--fpull-image=IMAGE", "true")),
        ("--container-mounts=/tmp:", ("--fpull-mounts=/tmp:", "--fpull-image=IMAGE", "true")),
        ("--container-workdir= (without argument)",
         ("--fpull-workdir=", "--fpull-image=IMAGE", "true")),
        ("--container-env= (without argument)", ("--fpull-env=", "--fpull-image=IMAGE", "true")),
        ("--container-env trailing comma",
         ("--fpull-env", "FOO,", "--fpull-image=IMAGE", "true"))):
    port("invalid_args.bats", "invalid arg: " + _name)(_invalid(*_args))


@port("invalid_args.bats", "invalid arg: --container-image=<very long invalid image name>")
def _(t):
    # head -c 2048 /dev/urandom | base64: 76 characters a line.
    t.srun_fails("--fpull-image=" + base64.encodebytes(os.urandom(2048)).decode().rstrip("\n"),
                 "true")


@port("invalid_args.bats", "invalid arg: --container-name without --container-image")
def _(t):
    r = t.srun("--fpull-name=args-test", "true")
    t.expect(r.rc != 0, "a non-zero exit: no container has the name: " + str(r))


@port("invalid_args.bats", "invalid arg: --container-save=<directory>")
def _(t):
    for save in ("/tmp/", "/", "./"):
        t.srun_fails("--fpull-save=" + save, "--fpull-image=" + t.image("ubuntu:24.04"), "true")


# -- mount_home.bats ------------------------------------------------------------------------
@port("mount_home.bats", "--container-mount-home --container-remap-root")
def _(t):
    t.srun_ok("--fpull-mount-home", "--fpull-remap-root",
              "--fpull-image=" + t.image("ubuntu:18.04"), "findmnt", t.home)


@port("mount_home.bats", "--container-mount-home --no-container-remap-root")
def _(t):
    t.srun_ok("--fpull-mount-home", "--no-fpull-remap-root",
              "--fpull-image=" + t.image("ubuntu:18.04"), "findmnt", t.home)


@port("mount_home.bats", "--no-container-mount-home --container-remap-root")
def _(t):
    t.srun_ok("--no-fpull-mount-home", "--fpull-remap-root",
              "--fpull-image=" + t.image("ubuntu:18.04"), "bash", "-c", "! findmnt " + t.home)


@port("mount_home.bats", "--no-container-mount-home --no-container-remap-root")
def _(t):
    t.srun_ok("--no-fpull-mount-home", "--no-fpull-remap-root",
              "--fpull-image=" + t.image("ubuntu:18.04"), "bash", "-c", "! findmnt " + t.home)


# -- mounts.bats ----------------------------------------------------------------------------
U18 = "ubuntu:18.04"


@port("mounts.bats", "--container-mounts absolute directory")
def _(t):
    t.srun_ok("--fpull-mounts=/home:/test-mnt", "--fpull-image=" + t.image(U18),
              "findmnt", "/test-mnt")


# A relative SRC is the submit's working directory's (the steps run from t.work).
@port("mounts.bats", "--container-mounts regular file")
def _(t):
    script = os.path.join(t.work, "mounts.bats")
    with open(script, "w") as f:
        f.write("@test \"a regular file\" {\n}\n")
    os.chmod(script, 0o644)
    r = t.srun_ok("--fpull-mounts=./mounts.bats:/script.bats", "--fpull-image=" + t.image(U18),
                  "cat", "/script.bats")
    t.assertEqual(r.stdout, "@test \"a regular file\" {\n}\n")


@port("mounts.bats", "--container-mounts character device file")
def _(t):
    t.srun_ok("--fpull-mounts=/dev/null:/null", "--fpull-image=" + t.image(U18), "bash", "-c",
              "[ -c /null ]")


@port("mounts.bats", "--container-mounts current working directory")
def _(t):
    t.srun_ok("--fpull-mounts=./:/test-mnt", "--fpull-image=" + t.image(U18), "findmnt",
              "/test-mnt")


@port("mounts.bats", "--container-mounts multiple entries")
def _(t):
    t.srun_ok("--fpull-mounts=./:/test-mnt,/dev/null:/null,/home:/host/home",
              "--fpull-image=" + t.image(U18), "sh", "-c",
              "findmnt /test-mnt && findmnt /null && findmnt /host/home")


@port("mounts.bats", "--container-mounts /etc/shadow")
def _(t):
    img = "--fpull-image=" + t.image(U18)
    t.srun_ok("--fpull-mounts=/etc/shadow:/shadow", img, "sh", "-c", "findmnt /shadow")
    r = t.srun_fails("--fpull-mounts=/etc/shadow:/shadow", img, "cat", "/shadow")
    t.assertIn("Permission denied", r.output)


@port("mounts.bats", "--container-mounts read-only directory")
def _(t):
    r = t.srun_fails("--fpull-mounts=/tmp:/mnt:ro", "--fpull-image=" + t.image(U18), "touch",
                     "/mnt/foo")
    t.assertIn("Read-only file system", r.output)


@port("mounts.bats", "--container-mounts multiple flags: unbindable+ro")
def _(t):
    img = "--fpull-image=" + t.image(U18)
    r = t.srun_fails("--fpull-mounts=/tmp:/mnt:unbindable+ro", img, "touch", "/mnt/foo")
    t.assertIn("Read-only file system", r.output)
    r = t.srun_ok("--fpull-mounts=/tmp:/mnt:unbindable+ro", img, "findmnt", "-o", "PROPAGATION",
                  "/mnt")
    t.assertIn("unbindable", r.last())


@port("mounts.bats", "--container-mounts path escape attempt")
def _(t):
    r = t.srun_fails("--fpull-mounts=/home:../home", "--fpull-image=" + t.image(U18), "true")
    t.assertIn("SRC and DST must be absolute paths", r.stderr)


@port("mounts.bats", "--container-mounts short-form")
def _(t):
    img = "--fpull-image=" + t.image(U18)
    t.srun_ok(img, "bash", "-c", "! findmnt /var/lib")
    t.srun_ok("--fpull-mounts=/var/lib", img, "findmnt", "/var/lib")


@port("mounts.bats", "--container-mounts tmpfs")
def _(t):
    r = t.srun("--fpull-mounts=tmpfs:/mytmpfs", "--fpull-image=" + t.image("ubuntu:20.04"),
               "findmnt", "-n", "-o", "fstype", "/mytmpfs")
    t.expect(r.rc == 0 and r.last() == "tmpfs", "a tmpfs at /mytmpfs: " + str(r))


@port("mounts.bats", "--container-mounts tmpfs huge pages")
def _(t):
    r = t.srun("--fpull-mounts=tmpfs:/mytmpfs:huge=within_size",
               "--fpull-image=" + t.image("ubuntu:20.04"), "findmnt", "-n", "-o", "options",
               "/mytmpfs")
    t.expect(r.rc == 0 and "huge=within_size" in r.output,
             "a tmpfs with huge=within_size: " + str(r))


@port("mounts.bats", "--container-mounts devpts")
def _(t):
    t.srun_fails("--fpull-mounts=devpts:/mydevpts:ro", "--fpull-image=" + t.image(U18), "findmnt",
                 "/mydevpts")


@port("mounts.bats", "--container-mounts invalid target")
def _(t):
    t.srun_fails("--fpull-mounts=/tmp:mnt:ro", "--fpull-image=" + t.image(U18), "findmnt", "/mnt")


def _spaced_dir(t):
    d = os.path.join(t.tmp, "pyxis test dir")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file.txt"), "w") as f:
        f.write("hello\n")
    os.chmod(d, 0o755)
    os.chmod(os.path.join(d, "file.txt"), 0o644)
    return d


@port("mounts.bats", "--container-mounts space in source path")
def _(t):
    r = t.srun_ok("--fpull-mounts=%s:/mnt/test" % _spaced_dir(t), "--fpull-image=" + t.image(U18),
                  "cat", "/mnt/test/file.txt")
    t.assertIn("hello", r.output)


@port("mounts.bats", "--container-mounts space in destination path")
def _(t):
    t.srun_ok("--fpull-mounts=/tmp:/mnt/my mount", "--fpull-image=" + t.image(U18), "findmnt",
              "/mnt/my mount")


@port("mounts.bats", "--container-mounts space in source and destination")
def _(t):
    r = t.srun_ok("--fpull-mounts=%s:/mnt/my mount" % _spaced_dir(t),
                  "--fpull-image=" + t.image(U18), "cat", "/mnt/my mount/file.txt")
    t.assertIn("hello", r.output)


@port("mounts.bats", "--container-mounts non-existent source path")
def _(t):
    r = t.srun_fails("--fpull-mounts=/nonexistent/path/foo:/mnt", "--fpull-image=" + t.image(U18),
                     "true")
    t.assertIn("--fpull-mounts: /nonexistent/path/foo: No such file or directory", r.output)


@port("mounts.bats", "--container-mounts non-existent source with valid mount")
def _(t):
    r = t.srun_fails("--fpull-mounts=/tmp:/mnt,/nonexistent/path:/mnt2",
                     "--fpull-image=" + t.image(U18), "true")
    t.assertIn("--fpull-mounts: /nonexistent/path: No such file or directory", r.output)


@port("mounts.bats", "--container-mounts umount")
def _(t):
    img = "--fpull-image=" + t.image("ubuntu:20.04")
    t.srun_ok("--fpull-mount-home", "--fpull-remap-root", img, "findmnt", t.home)
    r = t.srun("--fpull-mount-home", "--fpull-remap-root", "--fpull-mounts", "umount:" + t.home,
               img, "bash", "-c", "! findmnt " + t.home)
    t.expect(r.rc == 0, "umount:%s leaves the home unmounted: %s" % (t.home, r))


# -- mpi.bats -------------------------------------------------------------------------------
@port("mpi.bats", "PMIx mount")
def _(t):
    r = t.srun_ok("--mpi=pmix", "--ntasks=4", "-O", "--fpull-image=" + t.image(U18), "sh", "-c",
                  '[ -n "${PMIX_SERVER_TMPDIR}" ] && findmnt -n -o TARGET '
                  '"${PMIX_SERVER_TMPDIR:-error}"')
    t.assertEqual(len(r.lines), 4, str(r))


@port("mpi.bats", "PMIx environment variables")
def _(t):
    img = "--fpull-image=" + t.image("ubuntu:20.04")
    t.srun_ok("--fpull-name=mpi-test", img, "true")
    pmix = ["--mpi=pmix", "--ntasks=4", "-O", "--fpull-name=mpi-test", img]
    t.srun_ok(*pmix, "bash", "-c", '[ -n "${PMIX_RANK}" ]')
    r = t.srun_ok(*pmix, "bash", "-c", "echo ${PMIX_RANK}")
    t.assertEqual(sorted(r.lines, key=int), ["0", "1", "2", "3"])
    r = t.srun(*pmix, "bash", "-c",
               '[ -n "${PMIX_MCA_psec}" ] && [ "${PMIX_MCA_psec}" == "${PMIX_SECURITY_MODE}" ]')
    t.expect(r.rc == 0, "PMIX_MCA_psec is PMIX_SECURITY_MODE: " + str(r))
    r = t.srun(*pmix, "bash", "-c",
               '[ -n "${PMIX_MCA_gds}" ] && [ "${PMIX_MCA_gds}" == "${PMIX_GDS_MODULE}" ]')
    t.expect(r.rc == 0, "PMIX_MCA_gds is PMIX_GDS_MODULE: " + str(r))


@port("mpi.bats", "PMI2 file descriptor")
def _(t):
    t.srun_ok("--mpi=pmi2", "--ntasks=4", "-O", "--fpull-image=" + t.image(U18), "bash", "-c",
              '[ -n "${PMI_FD}" ] && realpath /proc/self/fd/${PMI_FD} | grep -q socket')


@port("mpi.bats", "PMI2 environment variables")
def _(t):
    img = "--fpull-image=" + t.image(U18)
    t.srun_ok("--mpi=pmi2", "--ntasks=4", "-O", img, "bash", "-c", '[ -n "${PMI_RANK}" ]')
    t.srun_ok("--mpi=pmi2", "--ntasks=4", "-O", img, "bash", "-c",
              '[ -n "${PMI_SIZE}" ] && [ "${PMI_SIZE}" -eq 4 ]')


# -- name.bats ------------------------------------------------------------------------------
@port("name.bats", "unnamed container cleanup")
def _(t):
    r = t.srun_ok("--fpull-image=" + t.image(U18), "sh", "-c", "echo $SLURM_JOB_ID.$SLURM_STEP_ID")
    job, step = r.last().split(".")
    t.assertEqual(job, t.allocation())
    t.expect(t.trees_gone([step]), "no tree of step %s left: %s" % (step, t.step_trees()))


# apt-get install -y file, without an archive: root writes a program called file.
INSTALL_FILE = ("printf '#!/bin/sh\\necho file-5.32\\n' >/usr/bin/file && chmod 755 /usr/bin/file")


@port("name.bats", "named container persistence")
def _(t):
    img = "--fpull-image=" + t.image(U18)
    t.srun_ok(img, "bash", "-c", "! which file")
    t.srun_ok(img, "--fpull-name=name-test", "--fpull-remap-root", "bash", "-c", INSTALL_FILE)
    t.srun_ok(img, "--fpull-name=name-test", "which", "file")
    r = t.srun_ok(img, "--fpull-name=name-test", "which", "file")
    t.assertEqual(r.last(), "/usr/bin/file")
    t.srun_ok(img, "bash", "-c", "! which file")
    t.srun_ok(img, "--fpull-name=name-test2", "true")
    t.srun_ok(img, "bash", "-c", "! which file")
    t.srun_ok(img, "--fpull-name=name-test2", "bash", "-c", "! which file")


@port("name.bats", "container cleanup after job cancellation")
def _(t):
    img = "--fpull-image=" + t.image("ubuntu:24.04")
    r = t.srun_ok(img, "bash", "-c", "echo ${SLURM_JOB_ID} ; echo ${SLURM_STEP_ID}")
    job, step = r.lines[-2], int(r.lines[-1])
    p = t.srun_bg(img, "sleep", "30")
    target = "%s.%d" % (job, step + 1)
    deadline = time.monotonic() + 60
    while target not in t.cluster._cmd(["squeue", "-s", "-h", "-o", "%i"]).stdout.split():
        t.assertLess(time.monotonic(), deadline, "step %s never ran" % target)
        time.sleep(0.2)
    t.cluster._cmd(["scancel", target])
    t.assertIsNotNone(t.finish(p))
    t.expect(t.trees_gone([str(step + 1)]),
             "no tree of step %d left: %s" % (step + 1, t.step_trees()))


# -- path.bats ------------------------------------------------------------------------------
def _path(image, prog, arg):
    def case(t):
        r = t.srun_ok("--fpull-image=" + t.image(image), prog, arg)
        t.assertEqual(r.last(), image_says(image))
    return case


port("path.bats", "redis-server PATH resolution")(
    _path("redis:5.0.8", "redis-server", "--version"))
port("path.bats", "rabbitmq PATH resolution")(_path("rabbitmq:3.8.3", "rabbitmqctl", "version"))


# -- remap_root.bats ------------------------------------------------------------------------
@port("remap_root.bats", "--container-remap-root uid map")
def _(t):
    img = "--fpull-image=" + t.image("ubuntu:24.04")
    r = t.srun_ok("--fpull-remap-root", img, "bash", "-c", "id -u")
    t.assertEqual(r.last(), "0")
    r = t.srun_ok("--fpull-remap-root", img, "bash", "-c", "cat /proc/self/uid_map")
    t.assertEqual(r.last().split(), ["0", str(slurm.NOBODY), "1"])


@port("remap_root.bats", "--no-container-remap-root uid map")
def _(t):
    img = "--fpull-image=" + t.image("ubuntu:24.04")
    r = t.srun_ok("--no-fpull-remap-root", img, "bash", "-c", "id -u")
    t.assertEqual(r.last(), str(slurm.NOBODY))
    # pyxis: "UID UID 1". fpull: the nested namespace's map, and the user on the node.
    r = t.srun_ok("--no-fpull-remap-root", img, t.shared_mount(), "bash", "-c",
                  "cat /proc/self/uid_map; touch /shared/uid-outside")
    t.assertEqual(r.last().split(), [str(slurm.NOBODY), "0", "1"])
    t.assertEqual(os.stat(os.path.join(t.shared, "uid-outside")).st_uid, slurm.NOBODY)


def _seccomp(flag):
    def case(t):
        r = t.srun(flag, "--fpull-image=" + t.image(U18), "grep", r"Seccomp:[[:space:]]\+2",
                   "/proc/self/status")
        t.expect(r.rc == 0, "seccomp mode 2 (a filter): " + str(r))
    return case


port("remap_root.bats", "--container-remap-root seccomp")(_seccomp("--fpull-remap-root"))
port("remap_root.bats", "--no-container-remap-root seccomp")(_seccomp("--no-fpull-remap-root"))


# -- squashfs_image.bats --------------------------------------------------------------------
def _sqsh(t, name="ubuntu.sqsh"):
    """enroot import -o NAME docker://ubuntu:24.04, as fpull does it, in the work directory."""
    path = os.path.join(t.work, name)
    if not os.path.exists(path):
        cp = fpull.run(["pull", "-q", "--format", "squashfs", "--cache-dir", t.cache,
                        t.image("ubuntu:24.04"), path], check=0)
        t.assertEqual(cp.returncode, 0, cp.stderr)
        os.chmod(path, 0o644)
        shutil.chown(path, "nobody", None)
    return "./" + name


@port("squashfs_image.bats", "Ubuntu 24.04 squashfs")
def _(t):
    r = t.srun_ok("--fpull-image=" + _sqsh(t), "grep", "Ubuntu 24.04", "/etc/os-release")
    t.assertIn("Ubuntu 24.04", r.stdout)


@port("squashfs_image.bats", "--container-save absolute path")
def _(t):
    image = os.path.join(t.work, "ubuntu-modified.sqsh")
    t.srun_ok("--fpull-image=" + t.image("ubuntu:24.04"), "--fpull-save=" + image, "sh", "-c",
              "echo pyxis > /test")
    # pyxis saves the container as the step left it (cat /test prints pyxis); fpull saves
    # the image as pulled.
    r = t.srun_ok("--fpull-image=" + image, "grep", "Ubuntu 24.04", "/etc/os-release")
    t.assertIn("Ubuntu 24.04", r.stdout)
    r = t.srun_fails("--fpull-image=" + image, "cat", "/test")
    t.assertIn("No such file or directory", r.output)
    os.unlink(image)  # as pyxis's teardown: the next test saves to the same name


@port("squashfs_image.bats", "--container-save relative path")
def _(t):
    r = t.srun_fails("--fpull-image=" + t.image("ubuntu:24.04"),
                     "--fpull-save=./ubuntu-modified.sqsh", "sh", "-c", "echo pyxis > /test")
    t.assertIn("--fpull-save=./ubuntu-modified.sqsh: not an absolute path", r.stderr)
    t.assertFalse(os.path.exists(os.path.join(t.work, "ubuntu-modified.sqsh")))


@port("squashfs_image.bats", "squashfs with --container-writable")
def _(t):
    r = t.srun_ok("--fpull-image=" + _sqsh(t), "bash", "-c",
                  "echo test > /tmp/file.txt && cat /tmp/file.txt")
    t.assertIn("test", r.output)


@port("squashfs_image.bats", "squashfs with --container-mounts")
def _(t):
    f = os.path.join(t.work, "test-file.txt")
    with open(f, "w") as fh:
        fh.write("mounted content\n")
    os.chmod(f, 0o644)
    r = t.srun_ok("--fpull-image=" + _sqsh(t), "--fpull-mounts=%s:/mnt/test.txt" % f, "cat",
                  "/mnt/test.txt")
    t.assertIn("mounted content", r.output)


@port("squashfs_image.bats", "squashfs with --container-workdir")
def _(t):
    r = t.srun_ok("--fpull-image=" + _sqsh(t), "--fpull-workdir=/tmp", "pwd")
    t.assertEqual(r.last(), "/tmp")


@port("squashfs_image.bats", "squashfs with --no-container-remap-root")
def _(t):
    r = t.srun_ok("--fpull-image=" + _sqsh(t), "--no-fpull-remap-root", "id", "-u")
    t.assertEqual(r.last(), str(slurm.NOBODY))


@port("squashfs_image.bats", "squashfs with multiple tasks")
def _(t):
    r = t.srun_ok("-n", "4", "-O", "--fpull-image=" + _sqsh(t), "hostname")
    t.assertGreaterEqual(len(r.lines), 4, str(r))


@port("squashfs_image.bats", "squashfs concurrent access")
def _(t):
    image = _sqsh(t)
    ps = [t.srun_bg("--overlap", "--fpull-image=" + image, "sleep", "2") for _ in range(2)]
    for p in ps:
        r = t.finish(p)
        t.assertIsNotNone(r)
        t.assertEqual(r.rc, 0, str(r))


@port("squashfs_image.bats", "squashfs container cleanup")
def _(t):
    image = _sqsh(t)
    steps = []
    for _ in range(2):
        r = t.srun_ok("--fpull-image=" + image, "sh", "-c", "echo $SLURM_STEP_ID")
        steps.append(r.last())
    t.expect(t.trees_gone(steps), "no tree of steps %s left: %s" % (steps, t.step_trees()))


@port("squashfs_image.bats", "squashfs nonexistent file")
def _(t):
    t.srun_fails("--fpull-image=./nonexistent.sqsh", "true")


# -- unshare_{ipc,net,uts}.bats -------------------------------------------------------------
def _shares(ns):
    def case(t):
        r = t.srun_ok("--fpull-image=" + t.image("ubuntu:24.04"), "readlink",
                      "/proc/self/ns/" + ns)
        t.assertEqual(r.last(), os.readlink("/proc/self/ns/" + ns))
    return case


for _ns in ("ipc", "net", "uts"):
    port("unshare_%s.bats" % _ns, "no --container-unshare shares host %sns" % _ns)(_shares(_ns))


# -- workdir.bats ---------------------------------------------------------------------------
@port("workdir.bats", "--container-workdir absolute target")
def _(t):
    r = t.srun_ok("--fpull-workdir=/usr/local/bin", "--fpull-image=" + t.image(U18), "pwd")
    t.assertEqual(r.last(), "/usr/local/bin")


@port("workdir.bats", "--container-workdir path escape attempt")
def _(t):
    # pyxis runs it in /; fpull refuses a relative directory at submit.
    r = t.srun_fails("--fpull-workdir=../", "--fpull-image=" + t.image(U18), "pwd")
    t.assertIn("--fpull-workdir=../: not an absolute path", r.stderr)
    t.assertEqual(r.stdout, "")


@port("workdir.bats", "--container-workdir target doesn't exist")
def _(t):
    r = t.srun_fails("--fpull-workdir=/pyxis", "--fpull-image=" + t.image(U18), "true")
    t.assertIn("/pyxis: No such file or directory", r.output)


@port("workdir.bats", "container image workdir")
def _(t):
    r = t.srun_ok("--fpull-image=" + t.image("nvidia/pytorch:20.02-py3", "#"), "pwd")
    t.assertEqual(r.last(), "/workspace")


# -- writable.bats --------------------------------------------------------------------------
@port("writable.bats", "--container-readonly")
def _(t):
    r = t.srun_fails("--fpull-readonly", "--fpull-image=" + t.image("ubuntu:20.04"), "touch",
                     "/newfile")
    t.assertIn("Read-only file system", r.output)


@port("writable.bats", "--container-writable")
def _(t):
    t.srun_ok("--fpull-image=" + t.image("ubuntu:20.04"), "touch", "/newfile")


# -- sbatch/sbatch.bats ---------------------------------------------------------------------
def _sbatch(t, options, script):
    """pyxis's run_sbatch: sbatch --wait -o LOG OPTIONS with the script on stdin."""
    log = os.path.join(t.cluster.outdir, "sbatch-%s.log" % os.urandom(4).hex())
    cp = subprocess.run(["runuser", "-u", "nobody", "--", "env", "HOME=" + t.home, "sbatch",
                         "--wait", "-o", log] + options, input=script, env=t.env(), cwd=t.work,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
    with open(log, errors="replace") as f:
        out = f.read()
    t.assertEqual(cp.returncode, 0, "%s\n%s\njob log:\n%s" % (cp.stdout, cp.stderr, out))
    return out


def _sbatch_case(image, grep, path):
    def case(t):
        ref = t.image(image)
        out = _sbatch(t, ["--fpull-image=" + ref], "#!/bin/bash\ngrep '%s' %s\n" % (grep, path))
        t.assertIn(grep, out)
        out = _sbatch(t, [], "#!/bin/bash\n#SBATCH --fpull-image=%s\ngrep '%s' %s\n" % (
            ref, grep, path))
        t.assertIn(grep, out)
    return case


port("sbatch.bats", "sbatch ubuntu:16.04")(_sbatch_case("ubuntu:16.04", "Ubuntu 16.04",
                                                       "/etc/os-release"))
port("sbatch.bats", "sbatch centos:8")(_sbatch_case("centos:8", "CentOS Linux release 8.",
                                                   "/etc/redhat-release"))


# -- the list, and docs/cluster.md's account of it ------------------------------------------
DOC = os.path.join(fpull.SRC_DIR, "docs", "cluster.md")
DOC_KINDS = {"Cannot apply": "n/a", "Run in part": "part",
             "Where fpull differs, fpull's behaviour is checked": "differs",
             "Gaps: these fail until the plugin changes": "gap"}


def bats_names(tests_dir):
    """{(file, name)} of every @test in pyxis's tests directory (bats's names: "\\$" is "$")."""
    found = []
    for sub in ("", "sbatch"):
        d = os.path.join(tests_dir, sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".bats"):
                with open(os.path.join(d, f)) as fh:
                    for m in re.finditer(r'^@test "((?:[^"\\]|\\.)*)"', fh.read(), re.M):
                        found.append((f, re.sub(r"\\(.)", r"\1", m.group(1))))
    return found


def doc_section():
    with open(DOC) as f:
        text = f.read()
    start = text.index("### pyxis's own tests")
    return text[start:text.index("\n## ", start)]


def doc_entries(section):
    """{(file, name): (kind, why)} from the section's lists: under each #### heading, a
    bullet per why, and under it a bullet per file with its tests in backticks, or all."""
    entries, kind, why, items = {}, None, None, []
    for line in section.splitlines() + [""]:
        if line.startswith("#### "):
            kind = DOC_KINDS[line[5:].strip()]
        elif line.startswith("- "):
            items.append([0, line[2:]])
        elif line.startswith("  - "):
            items.append([1, line[4:]])
        elif line.startswith("  ") and items and line.strip():
            items[-1][1] += " " + line.strip()
        elif not line.strip() and items:
            for depth, text in items:
                if depth == 0:
                    why = text
                    continue
                m = re.match(r"^`([a-z0-9_]+\.bats)`: (.*)$", text)
                bats, rest = m.group(1), m.group(2)
                names = re.findall(r"`([^`]+)`", rest) if rest != "all" else [
                    n for b, n, _, _ in PYXIS if b == bats]
                for n in names:
                    if (bats, n) in entries:
                        raise ValueError("%s: %s twice in docs/cluster.md" % (bats, n))
                    entries[(bats, n)] = (kind, why)
            items = []
    return entries


class PyxisList(unittest.TestCase):
    def test_every_pyxis_test_is_listed_once_with_its_port_or_why_not(self):
        keys = [(b, n) for b, n, _, _ in PYXIS]
        self.assertEqual(len(keys), len(set(keys)),
                         [k for k in keys if keys.count(k) > 1])
        self.assertEqual(len(keys), 187)
        for bats, name, kind, why in PYXIS:
            self.assertIn(kind, KINDS, name)
            runnable = kind != "n/a"
            # A case for every test that runs, none for one that cannot apply.
            self.assertEqual((bats, name) in CASES, runnable, "%s: %s" % (bats, name))
            if runnable:
                self.assertTrue(hasattr(PyxisSuite, method_of(bats)), bats)
            if kind != "ported":
                self.assertTrue(why, "%s: %s: %s without a why" % (bats, name, kind))
            if kind == "gap":
                self.assertRegex(why, r"^G\d: ")
        self.assertEqual(set(CASES) - set(keys), set(), "cases of tests pyxis does not have")
        # Every method of the suite runs some file's cases.
        methods = {m for m in dir(PyxisSuite) if m.startswith("test_")}
        self.assertEqual(methods, {method_of(b) for b, n, k, _ in PYXIS if k != "n/a"})
        # Where pyxis's sources are at hand (tests/ of NVIDIA/pyxis 0.24.0), the list is
        # theirs exactly, in their order.
        src = os.environ.get("FPULL_PYXIS_TESTS")
        if src:
            self.assertEqual(keys, bats_names(src))

    def test_docs_list_each_test_that_is_not_plainly_ported(self):
        section = doc_section()
        listed = doc_entries(section)
        want = {(b, n): (k, why) for b, n, k, why in PYXIS if k != "ported"}
        self.assertEqual(sorted(set(listed) - set(want)), [], "listed in the docs only")
        self.assertEqual(sorted(set(want) - set(listed)), [], "not listed in the docs")
        for key, (kind, why) in want.items():
            self.assertEqual(listed[key], (kind, why), key)
        flat = re.sub(r"\s+", " ", section)
        m = re.search(r"each of its (\d+) `@test` cases.*? (\d+) run as pyxis means them, (\d+) "
                      r"in part, (\d+) check fpull's behaviour where it differs from pyxis's, "
                      r"(\d+) fail until a gap is closed, and (\d+) cannot apply", flat)
        self.assertIsNotNone(m, "the counts' sentence")
        count = {k: sum(1 for _, _, kind, _ in PYXIS if kind == k) for k in KINDS}
        self.assertEqual([int(g) for g in m.groups()],
                         [len(PYXIS), count["ported"], count["part"], count["differs"],
                          count["gap"], count["n/a"]])
