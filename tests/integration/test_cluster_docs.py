"""docs/cluster.md, run as written: every fenced block of the guide is either run against
the real Slurm of tests/fixtures/slurm.py with the project installed under a temporary
prefix (`cmake --install BUILD --prefix TMP`), or marked as skipped with a reason.

Each block is preceded by a marker line, `<!-- test: ... -->`:
  skip REASON                 not run (site-specific: Lustre, NFS, a password, ...)
  SCENARIO admin              shell, as root
  SCENARIO job [exit=N]       shell, as the job user (nobody), in a work directory that is
                              also $HOME; the jobs it submits must end COMPLETED (or with
                              exit code N, as the block itself)
  SCENARIO file PATH          the block is written to PATH (relative: the work directory)
  SCENARIO slurm.conf         lines added to slurm.conf
  SCENARIO output             every line appears, in order, in the previous job block's
                              output (its stdout and stderr and its jobs' output files)
  SCENARIO output-of GLOB     the same, in the file(s) GLOB names
SCENARIO groups the blocks run against one cluster (one test method each). The guide's
names for the site's choices, listed in its first table, are the only text replaced:
/usr/local by the temporary prefix, registry.example.org by the test registry. Everything
else is literal: the test runs in a private mount namespace with empty tmpfs over
/etc/slurm, /run, /var/cache and /var/lib (the plugin's default run_dir is
/var/lib/fpull-slurm), so the guide's paths are its own and never the machine's.
"""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import cases
import fpull
import images
import slurm
from test_slurm import tools_layer

DOC = os.path.join(fpull.SRC_DIR, "docs", "cluster.md")
BUILD = os.environ.get("FPULL_BUILD_DIR", os.path.join(fpull.SRC_DIR, "build"))
MARK = re.compile(r"^<!-- test: (.*) -->\s*$")
FENCE = re.compile(r"^(\s*)```")
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
# Programs the test image carries from the host (with their libraries), so that a task
# run inside it, or a bundle's process, has a shell and the usual tools.
IMAGE_TOOLS = ["sh", "cat", "grep", "ls", "id", "echo", "true", "env"]


class Block:
    def __init__(self, line, mark, text):
        self.line = line
        self.mark = mark
        self.text = text

    def __repr__(self):
        return "docs/cluster.md:%d (%s)" % (self.line, self.mark)


def blocks(path=DOC):
    """Every fenced block of the guide with the marker line before it (None if none)."""
    out = []
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = start - 1
        mark = MARK.match(lines[j]).group(1).strip() if j >= 0 and MARK.match(lines[j]) else None
        body = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][len(m.group(1)):] if lines[i].startswith(m.group(1)) else lines[i])
            i += 1
        out.append(Block(start + 1, mark, "\n".join(body) + "\n"))
        i += 1
    return out


def names(path=DOC):
    """The guide's names for the site's choices: the first column of its first table."""
    with open(path) as f:
        text = f.read()
    table = re.search(r"\| name in this guide \|.*?\n\|[- |]+\n((?:\|.*\n)+)", text)
    return [re.match(r"\| `([^`]+)` \|", row).group(1) for row in table.group(1).splitlines()]


def _private_mounts(dirs):
    """This process (and the daemons it starts) gets its own empty DIRS."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    for d in dirs:
        if libc.mount(b"tmpfs", d.encode(), b"tmpfs", 0, b"mode=0755") != 0:
            raise OSError(ctypes.get_errno(), "mount tmpfs on " + d)


class ClusterDocs(cases.RegistryCase):
    tmp_prefix = "fpull-docs-test-"

    def setUp(self):
        slurm.require(self)
        if not os.path.isdir("/etc/slurm"):
            self.fail("/etc/slurm is missing (Debian's slurm-wlm-basic-plugins makes it)")
        # Before any thread is started: unshare(CLONE_NEWNS) needs a single-threaded process.
        _private_mounts(["/etc/slurm", "/run", "/var/cache", "/var/lib"])
        os.mkdir("/etc/slurm/plugstack.conf.d")
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.prefix = os.path.join(self.tmp, "prefix")
        cp = subprocess.run(["cmake", "--install", BUILD, "--prefix", self.prefix],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(cp.returncode, 0, cp.stdout)
        self.work = os.path.join(self.tmp, "work")
        os.mkdir(self.work, 0o755)
        os.chown(self.work, slurm.NOBODY, slurm.NOBODY)
        # `systemctl restart slurmd` asks the fixture to restart its slurmd.
        self.bin = os.path.join(self.tmp, "bin")
        os.mkdir(self.bin)
        self.restarts = os.path.join(self.tmp, "systemctl-requests")
        with open(os.path.join(self.bin, "systemctl"), "w") as f:
            f.write('#!/bin/sh\necho "$*" >>%s\n' % self.restarts)
        os.chmod(os.path.join(self.bin, "systemctl"), 0o755)
        self.subst = dict(zip(names(), [self.prefix, self.reg.hostport]))
        self.assertEqual(sorted(self.subst), ["/usr/local", "registry.example.org"])
        self.push_images()

    def push_images(self):
        tools = tools_layer(shutil.which(t, path="/usr/bin:/bin") for t in IMAGE_TOOLS)
        entries = []
        for kind in ("v2", "v3"):
            os_release = 'NAME="fpull doc test image"\nKIND=%s\n' % kind
            img = images.push_image(
                self.client, "hpc/app", None,
                [tools, [{"path": "etc/os-release", "data": os_release}]],
                config_extra={"config": {"Cmd": ["/bin/cat", "/etc/os-release"],
                                         "Env": ["PATH=/usr/bin:/bin"]}})
            entries.append((img, {"os": "linux", "architecture": "amd64",
                                  "features": ["x86-64-" + kind]}))
        images.push_index(self.client, "hpc/app", "1.0", entries)

    # -- running the guide -----------------------------------------------------------
    def substitute(self, text):
        for name, value in self.subst.items():
            text = text.replace(name, value)
        return text

    def env(self, cluster):
        e = cluster.env()
        e["PATH"] = "%s:%s:/usr/sbin:/usr/bin:/sbin:/bin" % (self.bin,
                                                          os.path.join(self.prefix, "bin"))
        for k in list(e):
            if k.startswith("FPULL_"):
                del e[k]
        return e

    def sh(self, cluster, text, user=None):
        argv = ["sh", "-e", "-c", text]
        env = self.env(cluster)
        if user:
            env["HOME"] = self.work
            argv = ["runuser", "-u", user, "--", "env", "HOME=" + self.work] + argv
        return subprocess.run(argv, cwd=self.work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=240)

    def check_lines(self, block, want, have, where):
        # Each line is part of some line of the output, in any order (tasks print at once).
        lines = have.splitlines()
        for line in self.substitute(want).splitlines():
            self.assertTrue(any(line in ln for ln in lines),
                            "%r: %r not in %s:\n%s" % (block, line, where, have))

    def run_scenario(self, scenario, **cluster_kw):
        todo = [b for b in blocks() if b.mark and b.mark.split()[0] == scenario]
        self.assertTrue(todo, "no block of scenario %s in docs/cluster.md" % scenario)
        conf = {}
        for b in todo:
            if b.mark.split()[1] == "slurm.conf":
                for ln in self.substitute(b.text).splitlines():
                    if ln.strip() and not ln.startswith("#"):
                        k, _, v = ln.partition("=")
                        conf[k.strip()] = v.strip()
        # Files are in place before anything runs: the guide may name one before it shows it.
        for b in todo:
            role, args = b.mark.split()[1], b.mark.split()[2:]
            if role == "file":
                path = os.path.join(self.work, self.substitute(args[0]))
                with open(path, "w") as f:
                    f.write(self.substitute(b.text))
                os.chmod(path, 0o755 if b.text.startswith("#!") else 0o644)
                if path.startswith(self.work + "/"):
                    os.chown(path, slurm.NOBODY, slurm.NOBODY)
        c = slurm.Cluster(conf=conf, **cluster_kw)
        self.addCleanup(c.stop)
        c.start()
        last = None
        for b in todo:
            role, args = b.mark.split()[1], b.mark.split()[2:]
            if role in ("slurm.conf", "file"):
                continue
            if role in ("admin", "job"):
                want = int(args[0][len("exit="):]) if args and args[0].startswith("exit=") else 0
                before = set(glob.glob(os.path.join(self.work, "slurm-*.out")))
                cp = self.sh(c, self.substitute(b.text), user="nobody" if role == "job" else None)
                # Every job the block started has ended (epilogs too) before the next block.
                c.settled_node_state()
                outs = sorted(set(glob.glob(os.path.join(self.work, "slurm-*.out"))) - before)
                text = cp.stdout
                for o in outs:
                    with open(o, errors="replace") as f:
                        text += f.read()
                self.assertEqual(cp.returncode, want, "%r exit %d:\n%s\n%s" % (
                    b, cp.returncode, text, c.logs()))
                for job in re.findall(r"Submitted batch job (\d+)", cp.stdout):
                    rec = c.job(job)
                    self.assertEqual(rec.get("ExitCode"), "%d:0" % want, "%r: job %s: %s\n%s" % (
                        b, job, rec, text))
                last = text
                if role == "admin" and os.path.exists(self.restarts):
                    with open(self.restarts) as f:
                        asked = f.read()
                    os.unlink(self.restarts)
                    if "slurmd" in asked.split():
                        c.restart_slurmd()
            elif role == "output":
                self.assertIsNotNone(last, "%r: no block before it" % b)
                self.check_lines(b, b.text, last, "the previous block's output")
            elif role == "output-of":
                files = sorted(glob.glob(os.path.join(self.work, self.substitute(args[0]))))
                self.assertTrue(files, "%r: no file %s" % (b, args[0]))
                newest = max(files, key=os.path.getmtime)
                with open(newest, errors="replace") as f:
                    self.check_lines(b, b.text, f.read(), newest)
            else:
                self.fail("%r: unknown role %s" % (b, role))
            self.assertEqual(c.node_state(), "idle", "%r: %s" % (b, c.node_reason()))
        return c

    # -- the tests ---------------------------------------------------------------------
    def test_plugin_section_runs_as_written(self):
        plugin = os.path.join(self.prefix, "lib", "slurm", "fpull_spank.so")
        if not os.path.exists(plugin):
            self.fail("%s was not installed (is libslurm-dev installed?)" % plugin)
        with open(plugin, "rb") as f:
            if b"fpull-mounts" not in f.read():
                self.skipTest("this tree's plugin does not run tasks in the image yet; the "
                              "guide describes the one that does (branch slurm)")
        # Debian's plugstack.conf: the guide's snippet goes into plugstack.conf.d/.
        self.run_scenario("plugin", plugstack="include /etc/slurm/plugstack.conf.d/*.conf\n")

    def test_prolog_script_section_runs_as_written(self):
        self.run_scenario("prolog")


class ClusterDocsMarks(unittest.TestCase):
    def test_every_block_is_run_or_says_why_not(self):
        found = blocks()
        self.assertGreater(len(found), 10)
        scenarios = ("plugin", "prolog")
        roles = ("admin", "job", "file", "slurm.conf", "output", "output-of")
        for b in found:
            self.assertIsNotNone(b.mark, "%r: no <!-- test: ... --> line before the block" % b)
            words = b.mark.split()
            if words[0] == "skip":
                self.assertGreater(len(words), 1, "%r: skipped without a reason" % b)
                continue
            self.assertIn(words[0], scenarios, b)
            self.assertIn(words[1], roles, b)
        # The names the test replaces are the ones the guide lists, and no more.
        self.assertEqual(names(), ["/usr/local", "registry.example.org"])

    def test_security_model_names_a_test_for_every_never(self):
        """Section 11: each sentence that says what the plugin never does (or that nothing
        happens) names tests, and each named test exists."""
        with open(DOC) as f:
            text = f.read()
        section = text[text.index("## 12. Security model"):]
        known = set()
        for path in glob.glob(os.path.join(fpull.SRC_DIR, "tests", "**", "*.py"),
                              recursive=True):
            with open(path) as f:
                known.update(re.findall(r"^    def (test_\w+)\(", f.read(), re.M))
        for path in glob.glob(os.path.join(fpull.SRC_DIR, "tests", "**", "*.c"),
                              recursive=True):
            with open(path) as f:
                known.update(re.findall(r"^TEST\((\w+)\)", f.read(), re.M))
        flat = re.sub(r"\s+", " ", section)
        claims = [c for c in re.split(r"(?<=[.:])\s+(?=[A-Z*`0-9])", flat)
                  if re.search(r"\b(never|nothing)\b", c)]
        self.assertGreaterEqual(len(claims), 6, claims)
        for claim in claims:
            names = re.findall(r"\(test: ([^)]*)\)", claim)
            self.assertTrue(names, "names no test: " + claim)
            for name in ",".join(names).split(","):
                self.assertIn(name.strip(), known, claim)

