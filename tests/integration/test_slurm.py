"""The Slurm SPANK plugin (contrib/slurm) and prolog script on a real Slurm: munged,
slurmctld and slurmd run on this machine (tests/fixtures/slurm.py), jobs are submitted
with sbatch as `nobody`, images come from the real docker-registry."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
import unittest

import cases
import faultproxy
import fpull
import images
import registry
import slurm

BUILD = os.environ.get("FPULL_BUILD_DIR", os.path.join(fpull.SRC_DIR, "build"))
PLUGIN = os.path.join(BUILD, "contrib", "slurm", "fpull_spank.so")
PROLOG = os.path.join(fpull.SRC_DIR, "contrib", "slurm", "prolog.sh")
DATA_DIR = os.environ.get("FPULL_DATA_DIR", os.path.join(fpull.SRC_DIR, "data"))


def on_node(line, node=slurm.NODE):
    """LINE ("fpull: ...") as the step's node says it: "fpull: NODE: ...", each line of the
    plugin's and the runner's naming the node it comes from (issue 41)."""
    assert line.startswith("fpull: "), line
    return "fpull: %s: %s" % (node, line[len("fpull: "):])



def kind_layer(kind):
    return [{"path": "etc/kind", "data": kind + "\n"},
            {"path": "opt/app/bin/run", "data": "#!/bin/sh\necho %s\n" % kind, "mode": 0o755},
            {"path": "data/blob-" + kind, "data": os.urandom(30000)}]


class SlurmCase(cases.RegistryCase):
    tmp_prefix = "fpull-slurm-test-"

    def setUp(self):
        slurm.require(self)
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.cache = os.path.join(self.tmp, "cache")
        self.run_dir = os.path.join(self.tmp, "run")
        self.config = os.path.join(self.tmp, "fpull.yaml")
        with open(self.config, "w") as f:
            f.write("detect: true\n")
        os.chmod(self.config, 0o644)
        # Two node kinds: an x86-64-v2 build and an x86-64-v3 build of one application.
        self.v2 = images.push_image(self.client, "hpc/app", None, [kind_layer("v2")])
        self.v3 = images.push_image(self.client, "hpc/app", None, [kind_layer("v3")])
        images.push_index(self.client, "hpc/app", "1.0", [
            (self.v2, {"os": "linux", "architecture": "amd64", "features": ["x86-64-v2"]}),
            (self.v3, {"os": "linux", "architecture": "amd64", "features": ["x86-64-v3"]})])
        self.ref = "%s/hpc/app:1.0" % self.reg.hostport

    def require_plugin(self, *tools):
        """The plugin must have been built (its absence is a build error, not a skip); the
        tools it is to run here must be installed, else the test is skipped."""
        if not os.path.isfile(PLUGIN):
            self.fail("%s was not built (is libslurm-dev installed?)" % PLUGIN)
        for tool in tools:
            if not shutil.which(tool):
                self.skipTest("%s is not installed (Debian: %s)" % (tool, tool))

    def big_behind_proxy(self, size):
        """hpc/big:1.0 (the tools, and size bytes of random data) as self.big, behind a
        fault proxy (self.proxy) that can hold a step's pull."""
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        images.push_image(self.client, "hpc/big", "1.0",
                          [tools_layer(), os_release("big"),
                           [{"path": "data/blob", "data": os.urandom(size)}]])
        self.big = "%s/hpc/big:1.0" % self.proxy.hostport

    def start_cluster(self, **kw):
        c = slurm.Cluster(**kw)
        self.addCleanup(c.stop)
        return c.start()

    def blob_gets(self):
        return self.reg.blob_gets()


# Host programs (and their libraries) that the test images carry, so that a task inside
# runs a shell, cat, id, ... of the image's own, not the node's.
TOOLS = ("/bin/sh", "/usr/bin/cat", "/usr/bin/id", "/usr/bin/sleep", "/usr/bin/env",
         "/usr/bin/pwd", "/usr/bin/ls", "/usr/bin/touch", "/usr/bin/readlink", "/usr/bin/stat")


def _merged(path):
    """PATH as the merged-/usr layout names it (/lib/x -> /usr/lib/x)."""
    for top in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
        if path.startswith(top):
            return "/usr" + path
    return path


def tools_layer(tools=TOOLS):
    """Entries for the tools (host paths), their libraries, the merged-/usr symlinks and
    /tmp."""
    files = set()
    for tool in tools:
        files.add(tool)
        out = subprocess.run(["ldd", tool], stdout=subprocess.PIPE, text=True).stdout
        for m in re.finditer(r"(/\S+) \(0x", out):
            files.add(m.group(1))
    entries, seen = [], set()
    for d in ("bin", "sbin", "lib", "lib64"):
        entries.append({"path": d, "type": "symlink", "target": "usr/" + d})
    entries.append({"path": "tmp", "type": "dir", "mode": 0o1777})
    for f in sorted(files):
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            with open(real, "rb") as fh:
                entries.append({"path": real.lstrip("/"), "data": fh.read(), "mode": 0o755})
        name = _merged(f)
        if name != real and name not in seen:
            seen.add(name)
            entries.append({"path": name.lstrip("/"), "type": "symlink", "target": real})
    return entries


def step_pulls(run_dir):
    """The fpull processes of steps (their DEST is under run_dir): "PID COMMAND" lines."""
    cp = subprocess.run(["pgrep", "-u", "nobody", "-a", "-x", "fpull"],
                        stdout=subprocess.PIPE, text=True)
    return [ln for ln in cp.stdout.splitlines() if run_dir + "/" in ln]


def cpu_seconds(text):
    """Slurm's [D-][HH:]MM:SS[.mmm] as seconds; -1 when it is not that."""
    m = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$", text)
    if not m:
        return -1
    d, h, mi, se = m.groups()
    return ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi)) * 60 + float(se)


def job_dirs(run_dir):
    """What is in run_dir but the users' stores (kept images, on by default where the node
    has a /dev/fuse users may open): the job directories left behind."""
    return [e for e in (os.listdir(run_dir) if os.path.isdir(run_dir) else []) if e != "store"]


def holders(run_dir):
    """Processes whose root is under run_dir: containers' init processes (rootless runc's
    holders) or tasks left behind."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            root = os.readlink("/proc/%s/root" % pid)
        except (OSError, ValueError):
            continue
        if root.startswith(run_dir + "/"):
            found.append((pid, root))
    return found


def os_release(name):
    return [{"path": "etc/os-release", "data": 'NAME="%s"\nID=fpulltest\n' % name},
            {"path": "etc/kind", "data": name + "\n"}]


class SlurmPlugin(SlurmCase):
    """The plugin runs each step's tasks inside the image (rootless runc, setns)."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        tools = tools_layer()
        self.images = {}
        for kind in ("v2", "v3"):
            self.images[kind] = images.push_image(
                self.client, "hpc/os", None, [tools, os_release("image-" + kind)],
                config_extra={"config": {"Env": ["PATH=/usr/bin:/bin", "APP_KIND=" + kind,
                                                 "SLURM_FAKE=image"],
                                         "WorkingDir": "/tmp"}})
        images.push_index(self.client, "hpc/os", "1.0", [
            (self.images["v2"], {"os": "linux", "architecture": "amd64",
                                 "features": ["x86-64-v2"]}),
            (self.images["v3"], {"os": "linux", "architecture": "amd64",
                                 "features": ["x86-64-v3"]})])
        self.os_ref = "%s/hpc/os:1.0" % self.reg.hostport
        self.other = images.push_image(self.client, "hpc/other", "1.0",
                                       [tools, os_release("other")])
        self.other_ref = "%s/hpc/other:1.0" % self.reg.hostport
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=self.plugin_args())

    def plugin_args(self):
        return ["run_dir=" + self.run_dir, "config=" + self.config, "data_dir=" + DATA_DIR,
                "fpull=" + fpull.binary()]

    def start_cluster(self, **kw):
        if self._testMethodName == "test_sstat_accounts_the_task_inside":
            kw.setdefault("conf", {}).update({"JobAcctGatherType": "jobacct_gather/linux",
                                              "JobAcctGatherFrequency": "1"})
        return super().start_cluster(**kw)

    def home(self, name, user="nobody"):
        """A home directory USER owns (nobody's own is /nonexistent)."""
        d = os.path.join(self.tmp, name)
        os.mkdir(d, 0o700)
        shutil.chown(d, user, None)
        return d

    def srun(self, args, user="nobody", env=None, timeout=None):
        argv = ["env"] + ["%s=%s" % kv for kv in (env or {}).items()] + ["srun"] + list(args)
        return self.cluster._cmd(argv, check=False, user=user)

    def submit(self, options, script, user="nobody"):
        cp, job = self.cluster.sbatch(options, script, user=user)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        return job, rec, self.cluster.output(job)

    def assert_clean(self):
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(job_dirs(self.run_dir), [])
        self.assertEqual(holders(self.run_dir), [])

    def test_task_runs_in_the_image(self):
        cp = self.srun(["--fpull-image=" + self.os_ref, "--fpull-features=x86-64-v3",
                        "sh", "-c", 'cat /etc/os-release; id -u; id -g; pwd; '
                                    'echo "kind=$APP_KIND digest=$FPULL_IMAGE_DIGEST"'])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        v3 = self.images["v3"]["digest"]
        self.assertEqual(cp.stdout.splitlines(), [
            'NAME="image-v3"', "ID=fpulltest", str(slurm.NOBODY), str(slurm.NOBODY), "/tmp",
            "kind=v3 digest=%s" % v3], cp.stderr)
        # One line says what this node chose, and the pull's progress is on the step's
        # stderr as lines (no terminal bar).
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s: %s \(linux/amd64 x86-64-v3, the "
                                    r"entry for --fpull-features: .*rule \d\)\)$" % (
                                        re.escape(self.os_ref), v3))
        # Nothing else by default: a pull this quick prints no progress line (issue 30).
        self.assertEqual(len([ln for ln in cp.stderr.splitlines() if not ln.startswith("srun: ")]),
                         1, cp.stderr)
        self.assertNotIn("\r", cp.stderr)
        # The container runs no command of the image's: no warning that it names none.
        self.assertNotIn("Entrypoint", cp.stderr)
        self.assert_clean()

    def test_chosen_entry_line_gives_the_rule_as_inspect_says_it(self):
        """One line per node: the chosen digest, its features and the ranking rule that
        decided, in fpull inspect's words (pull --json's why)."""
        cp = self.srun(["--fpull-image=" + self.os_ref, "--fpull-features=x86-64-v3",
                        "cat", "/etc/os-release"])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        _, ins = fpull.run_json(["inspect", "--config", self.config, "--features", "x86-64-v3",
                                 self.os_ref])
        chosen = [e for e in ins["entries"] if e["chosen"]]
        self.assertEqual(len(chosen), 1, ins)
        why = chosen[0]["why"]
        self.assertIn("rule ", why)
        _, pulled = fpull.run_json(["pull", "--config", self.config, "--cache-dir", self.cache,
                                    "--features", "x86-64-v3", self.os_ref,
                                    os.path.join(self.tmp, "pulled")])
        self.assertEqual(pulled["why"], why)
        lines = [l for l in cp.stderr.splitlines() if l.startswith("fpull: ") and
                 self.images["v3"]["digest"] in l]
        self.assertEqual(len(lines), 1, cp.stderr)
        self.assertRegex(lines[0], r"^fpull: [^ ]+: " + re.escape(
            "%s: %s (linux/amd64 x86-64-v3, the entry for --fpull-features: %s)" % (
                self.os_ref, self.images["v3"]["digest"], why)) + "$")
        # A single manifest has no rule to give.
        cp = self.srun(["--fpull-image=" + self.other_ref, "cat", "/etc/os-release"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s: %s \(linux/amd64, the only "
                                    r"entry\)$" % (re.escape(self.other_ref),
                                                    self.other["digest"]))

    def test_remap_root(self):
        cp = self.srun(["--fpull-image=" + self.other_ref, "--fpull-remap-root",
                        "sh", "-c", "id -u; cat /etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "0\nother\n"), cp.stderr)

    def test_entrypoint_runs_first_with_the_command_as_its_arguments(self):
        """--fpull-entrypoint (pyxis's --container-entrypoint): the image's Entrypoint runs
        with the task's command as its arguments; without it, the command alone."""
        entry = [{"path": "entry.sh", "mode": 0o755,
                  "data": "#!/bin/sh\necho \"entrypoint-ran $0 $#\"\nexport FROM_ENTRY=yes\n"
                          "exec \"$@\"\n"}]
        img = images.push_image(self.client, "hpc/entry", "1.0",
                                [tools_layer(), os_release("entry"), entry],
                                config_extra={"config": {"Entrypoint": ["/entry.sh"],
                                                         "Cmd": ["echo", "from-cmd"]}})
        ref = "%s/hpc/entry:1.0" % self.reg.hostport
        cp = self.srun(["--fpull-image=" + ref, "--fpull-entrypoint", "-n", "2", "sh", "-c",
                        'echo "task $SLURM_PROCID $FROM_ENTRY $1 $2"', "zero", "it's", "two"])
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        self.assertEqual(sorted(cp.stdout.splitlines()), [
            "entrypoint-ran /entry.sh 6", "entrypoint-ran /entry.sh 6",
            "task 0 yes it's two", "task 1 yes it's two"], cp.stderr)
        self.assertIn(img["digest"], cp.stderr)
        # Off by default: the command alone (the image's Cmd is not run either).
        cp = self.srun(["--fpull-image=" + ref, "sh", "-c", 'echo "plain ${FROM_ENTRY:-no}"'])
        self.assertEqual((cp.returncode, cp.stdout), (0, "plain no\n"), cp.stderr)
        # A flag: a value is refused at submit, before any pull.
        cp = self.srun(["--fpull-image=" + ref, "--fpull-entrypoint=yes", "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("entrypoint-ran", cp.stdout)
        self.assertIn("fpull-entrypoint", cp.stderr)
        self.assert_clean()

    def test_host_dev_and_amd_gpu_variables_reach_the_tasks(self):
        """AMD GPUs: the container has the host's /dev whole (so /dev/kfd and /dev/dri's
        render nodes where the node has them: SlurmGpuNode makes them; here the test compares the
        listing), and the job's ROCR_/HIP_VISIBLE_DEVICES win over the image's."""
        img = images.push_image(self.client, "hpc/rocm", "1.0", [tools_layer(),
                                                                 os_release("rocm")],
                                config_extra={"config": {"Env": [
                                    "PATH=/usr/bin:/bin", "ROCR_VISIBLE_DEVICES=9",
                                    "HIP_VISIBLE_DEVICES=9", "GPU_DEVICE_ORDINAL=9"]}})
        ref = "%s/hpc/rocm:1.0" % self.reg.hostport
        cp = self.srun(["--fpull-image=" + ref, "sh", "-c",
                        'echo "$ROCR_VISIBLE_DEVICES $HIP_VISIBLE_DEVICES $GPU_DEVICE_ORDINAL";'
                        ' ls -a /dev'],
                       env={"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "0,1",
                            "GPU_DEVICE_ORDINAL": "0,1"})
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        lines = cp.stdout.splitlines()
        self.assertEqual(lines[0], "0,1 0,1 0,1")
        self.assertEqual(sorted(set(lines[1:]) - {".", ".."}), sorted(os.listdir("/dev")))
        self.assertIn(img["digest"], cp.stderr)

    def test_env_merged_under_the_jobs(self):
        # The image's PATH wins over the node's; Slurm's variables and the site's
        # env_passthrough names keep the job's value.
        cp = self.srun(["--fpull-image=" + self.os_ref, "--fpull-features=x86-64-v2", "sh", "-c",
                        'echo "$PATH|$SLURM_FAKE|$SLURM_PROCID"'],
                       env={"PATH": "/node/bin:/usr/bin:/bin", "SLURM_FAKE": "job"})
        self.assertEqual((cp.returncode, cp.stdout), (0, "/usr/bin:/bin|job|0\n"), cp.stderr)

    def test_bind_mount_is_writable_and_lands_on_the_host_as_the_user(self):
        data = os.path.join(self.tmp, "data")
        os.mkdir(data, 0o755)
        shutil.chown(data, "nobody", None)
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro)
        os.chmod(ro, 0o777)  # only the mount's ro keeps the task out
        cp = self.srun(["--fpull-image=" + self.other_ref,
                        "--fpull-mounts=%s:/data,%s:/ro:ro" % (data, ro),
                        "sh", "-c", "echo hello >/data/out && touch /ro/x; echo rc=$?"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout, "rc=1\n", cp.stderr)
        st = os.stat(os.path.join(data, "out"))
        self.assertEqual((st.st_uid, open(os.path.join(data, "out")).read()),
                         (slurm.NOBODY, "hello\n"))
        self.assertEqual(os.listdir(ro), [])

    def test_relative_mount_source_is_the_submit_directorys(self):
        # As pyxis: a relative SRC of --fpull-mounts is in the directory srun runs from.
        work = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(work, "sub"))
        with open(os.path.join(work, "sub", "in"), "w") as f:
            f.write("here\n")
        for d in (work, os.path.join(work, "sub")):
            os.chmod(d, 0o755)
        os.chmod(os.path.join(work, "sub", "in"), 0o644)

        def srun_in_work(mounts):
            return subprocess.run(
                ["runuser", "-u", "nobody", "--", "env", "PWD=" + work, "srun",
                 "--fpull-image=" + self.other_ref, "--fpull-mounts=" + mounts, "sh", "-c",
                 "cat /data/in; ls /work"], cwd=work, env=self.cluster.env(),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
        cp = srun_in_work("sub:/data,./:/work:ro")
        self.assertEqual((cp.returncode, cp.stdout), (0, "here\nsub\n"), cp.stderr)
        # Checked at submit as an absolute one: one that is not there is named by its path.
        cp = srun_in_work("./nope:/data")
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("fpull: --fpull-mounts: %s/nope: No such file or directory" % work,
                      cp.stderr)
        self.assert_clean()

    def test_four_tasks_share_one_container(self):
        cp = self.srun(["-n", "4", "-O", "--fpull-image=" + self.other_ref, "sh", "-c",
                        'echo "$SLURM_PROCID $(readlink /proc/self/ns/mnt) $(cat /etc/kind)"'])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rows = sorted(ln.split() for ln in cp.stdout.splitlines())
        self.assertEqual([r[0] for r in rows], ["0", "1", "2", "3"], cp.stdout)
        self.assertEqual(len({r[1] for r in rows}), 1, cp.stdout)
        self.assertNotEqual(rows[0][1], os.readlink("/proc/self/ns/mnt"))
        self.assertEqual({r[2] for r in rows}, {"other"})
        # The chosen entry is said once for the node, not once per task.
        self.assertEqual(len(re.findall(r"(?m)^fpull: .*%s" % re.escape(self.other["digest"]),
                                        cp.stderr)), 1, cp.stderr)

    def sleeping_step(self, name, command):
        """srun -J NAME COMMAND in the image as nobody, COMMAND ending in this test's sleep:
        (the srun process, the job id) once the task sleeps."""
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "srun", "-J", name,
                              "--fpull-image=" + self.other_ref] + command,
                             env=self.cluster.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        for _ in range(300):
            cp = self.cluster._cmd(["squeue", "-h", "-n", name, "-t", "R", "-o", "%i"],
                                   check=False)
            if cp.stdout.strip() and self.task_sleeping():
                return p, cp.stdout.strip()
            if p.poll() is not None:
                break
            time.sleep(0.2)
        self.fail("%s never ran: %s%s" % (name, p.stderr.read() if p.poll() is not None else "",
                                         self.cluster.logs()))

    def test_scancel_ends_the_task_inside(self):
        p, job = self.sleeping_step("longjob", ["sleep", self.sleep_arg()])
        self.cluster._cmd(["scancel", job])
        out, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(self.task_sleeping())
        self.assert_clean()

    def sleep_arg(self):
        # This test's own duration: another cluster's test may run a sleep as nobody too.
        return "300.%d" % os.getpid()

    def task_sleeping(self):
        # (Slurm runs it as /usr/bin/sleep.)
        cp = subprocess.run(["pgrep", "-u", "nobody", "-f", r"sleep %s$" % re.escape(
                                self.sleep_arg())],
                            stdout=subprocess.PIPE)
        return cp.returncode == 0

    def test_sstat_accounts_the_task_inside(self):
        # The task in the image is the step's own process: Slurm's accounting gathers its
        # CPU time and memory like any task's.
        p, job = self.sleeping_step("acct", [
            "sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done; "
                        "sleep " + self.sleep_arg()])
        row = None
        for _ in range(600):
            cp = self.cluster._cmd(["sstat", "-a", "-n", "-P", "-j", job + ".0", "-o",
                                    "JobID,NTasks,AveCPU,MaxRSS"], check=False)
            row = cp.stdout.strip().split("|")
            # Until the first sample, sstat prints an empty MaxRSS and any AveCPU.
            if len(row) == 4 and re.match(r"^[1-9]\d*[KMG]$", row[3]) and \
                    0 < cpu_seconds(row[2]) < 3600:
                break
            time.sleep(0.2)
        self.assertEqual(row[:2], [job + ".0", "1"], row)
        self.assertTrue(0 < cpu_seconds(row[2]) < 3600, row)  # the loop's CPU
        self.assertRegex(row[3], r"^[1-9]\d*[KMG]$", row)
        self.cluster._cmd(["scancel", job])
        p.communicate(timeout=60)
        self.assert_clean()

    def test_format_squashfs_where_the_node_cannot_mount_unpacks(self):
        if sqsh_route().startswith("mounted"):
            self.skipTest("this node can mount SquashFS files for users "
                          "(SlurmSqshMount tests that)")
        cp = self.srun(["--fpull-image=" + self.other_ref, "--fpull-format=squashfs",
                        "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "other\n"), cp.stderr)
        self.assertIn(on_node("fpull: %s: --fpull-format=squashfs: this node cannot mount "
                              "SquashFS files for users (it needs squashfuse, fuse-overlayfs "
                              "and a /dev/fuse users may open): unpacked instead" %
                              self.other_ref), cp.stderr)
        self.assert_clean()

    def test_batch_script_runs_in_the_image(self):
        # As pyxis (its tests/sbatch/sbatch.bats): sbatch's --fpull-image runs the script
        # itself inside, the option given on the command line or on an #SBATCH line (issue
        # 30 item 4). The script's path is slurmd's spool, mounted read-only.
        script = ('cat /etc/kind; id -u; pwd\n'
                  'echo "kind=$APP_KIND digest=$FPULL_IMAGE_DIGEST"\n'
                  'touch "$0" 2>/dev/null && echo script-writable || echo script-read-only\n')
        for kind, options, head in (
                ("v2", ["--fpull-image=" + self.os_ref, "--fpull-features=x86-64-v2"], ""),
                ("v3", [], "#SBATCH --fpull-image=%s\n#SBATCH --fpull-features=x86-64-v3\n"
                 % self.os_ref)):
            job, rec, out = self.submit(options, head + script)
            self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
            lines = [ln for ln in out.splitlines() if not ln.startswith("fpull: ")]
            self.assertEqual(lines, ["image-" + kind, str(slurm.NOBODY), "/tmp",
                                     "kind=%s digest=%s" % (kind, self.images[kind]["digest"]),
                                     "script-read-only"], out)
        self.assert_clean()

    def test_batch_script_without_an_image_runs_on_the_node(self):
        # A job without --fpull-image, and one whose batch step says none: the node's /.
        for options in ([], ["--fpull-image=none"]):
            job, rec, out = self.submit(options, 'test -e /etc/kind && echo image || echo node\n')
            self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
            self.assertEqual(out.splitlines(), ["node"], out)
        self.assert_clean()

    def test_batch_steps_inherit_the_image_or_name_another_or_none(self):
        # The script runs in an image that has Slurm's client (srun, its plugins and
        # libraries, this plugin) with the cluster's configuration and munge socket mounted,
        # as a site would mount them: its steps inherit --fpull-image, and a step may name
        # another image or none, the node itself (issue 30 item 4).
        slurm_dir = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
        tools = [os.path.join(slurm_dir, f) for f in sorted(os.listdir(slurm_dir))
                 if f.endswith(".so")]
        client = tools_layer(TOOLS + ("/usr/bin/srun", PLUGIN) + tuple(tools))
        # What an image of a distribution has: root (slurm.conf's SlurmUser) and localhost.
        client += [{"path": "etc/hosts", "data": open("/etc/hosts").read()},
                   {"path": "etc/passwd", "data": "root:x:0:0:root:/root:/bin/sh\n"},
                   {"path": "etc/group", "data": "root:x:0:\n"}]
        ref = "%s/hpc/client:1.0" % self.reg.hostport
        images.push_image(self.client, "hpc/client", "1.0", [client, os_release("client")],
                          config_extra={"config": {"Env": ["PATH=/usr/bin:/bin"]}})
        site = ",".join("%s:%s:ro" % (d, d) for d in (self.cluster.workdir,
                                                        os.path.dirname(PLUGIN)))
        job, rec, out = self.submit(
            ["--fpull-image=" + ref, "--fpull-mounts=" + site],
            'cat /etc/kind\n'
            'srun cat /etc/kind\n'
            'srun --fpull-image=%s cat /etc/kind\n'
            'srun --fpull-image=none sh -c "test -e /etc/kind && echo image || echo node"\n'
            % self.other_ref)
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        # (Slurm's own "srun: ... step creation temporarily disabled" lines aside.)
        lines = [ln for ln in out.splitlines() if not ln.startswith(("fpull: ", "srun: "))]
        self.assertEqual(lines, ["client", "client", "other", "node"], out)
        self.assert_clean()

    def test_a_working_directory_the_layers_lack_is_made(self):
        # As docker and runc do: the image's WorkingDir is made in the step's tree (found
        # when saved .sqsh files started to keep it, issue 30 item 8).
        images.push_image(self.client, "hpc/wd", "1.0", [tools_layer(), os_release("wd")],
                          config_extra={"config": {"WorkingDir": "/work/made"}})
        cp = self.srun(["--fpull-image=%s/hpc/wd:1.0" % self.reg.hostport, "pwd"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "/work/made\n"), cp.stderr)
        # --fpull-workdir is the user's word: a missing one fails the step, naming it
        # (test_failed_task_leaves_no_container_behind).
        self.assert_clean()

    def test_bad_image_fails_the_step_not_the_node(self):
        bad = "%s/hpc/os:nope" % self.reg.hostport
        cp = self.srun(["--fpull-image=" + bad, "echo", "ran"])
        self.assertEqual(cp.returncode, 5, cp.stdout + cp.stderr)
        self.assertNotIn("ran", cp.stdout)
        self.assertRegex(cp.stderr, r"(?m)^fpull: .*nope.*MANIFEST_UNKNOWN")
        self.assert_clean()

    def test_typos_are_refused_at_submit(self):
        for opt, want in (
                ("--fpull-features=brodwell",
                 "fpull: --fpull-features=brodwell: unknown feature \"brodwell\" (did you mean "
                 "\"broadwell\"?)"),
                ("--fpull-format=dri", "fpull: --fpull-format=dri: unknown value (did you mean "
                                       "'dir'?)"),
                ("--fpull-pull=nevr", "fpull: --fpull-pull=nevr: unknown value (did you mean "
                                      "'never'?)"),
                ("--fpull-mounts=/tmp:/data:rx", "fpull: --fpull-mounts: '/tmp:/data:rx': "
                                                 "unknown flag 'rx' (did you mean 'ro'?)"),
                ("--fpull-mounts=/tmp:/../etc", "fpull: --fpull-mounts: '/tmp:/../etc': DST "
                                                "must not contain '..'"),
                ("--fpull-workdir=/tmp/../..", "fpull: --fpull-workdir=/tmp/../..: must not "
                                               "contain '..'"),
                ("--fpull-workdir=tmp", "fpull: --fpull-workdir=tmp: not an absolute path")):
            cp, job = self.cluster.sbatch(["--fpull-image=" + self.os_ref, opt], "echo ran\n")
            self.assertNotEqual(cp.returncode, 0, opt)
            self.assertIsNone(job)
            self.assertIn(want, cp.stderr)
            cp = self.srun(["--fpull-image=" + self.os_ref, opt, "echo", "ran"])
            self.assertNotEqual(cp.returncode, 0, opt)
            self.assertIn(want, cp.stderr)
            self.assertNotIn("ran", cp.stdout)
        # Nothing was queued.
        cp = self.cluster._cmd(["squeue", "-h", "-t", "all", "-o", "%i"])
        self.assertEqual(cp.stdout.strip(), "")

    def test_symlink_workdir_and_mount_stay_inside(self):
        # An image whose symlinks point at the host's root: inside, / is the image's.
        img = images.push_image(self.client, "hpc/links", "1.0", [
            tools_layer(), os_release("links"),
            [{"path": "up", "type": "symlink", "target": "../../../../.."},
             {"path": "abs", "type": "symlink", "target": "/"}]])
        ref = "%s/hpc/links:1.0" % self.reg.hostport
        marker = os.path.join(self.tmp, "marker-%s" % os.urandom(4).hex())
        os.mkdir(marker)
        data = os.path.join(self.tmp, "d")
        os.mkdir(data)
        os.chmod(data, 0o777)
        cp = self.srun(["--fpull-image=" + ref, "--fpull-workdir=/up",
                        "--fpull-mounts=%s:/abs/escaped" % data,
                        "sh", "-c", "pwd; cat etc/kind; ls %s >/dev/null 2>&1 || echo no-marker; "
                                    "test -d /escaped && echo in-image-root" % marker])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines(), ["/", "links", "no-marker", "in-image-root"],
                         cp.stderr)
        self.assertFalse(os.path.exists("/escaped"))

    def test_private_image_stays_private(self):
        pw = os.path.join(self.tmp, "htpasswd")
        out = subprocess.run(["htpasswd", "-Bbn", "alice", "4lice-pw"], check=True,
                             stdout=subprocess.PIPE).stdout
        with open(pw, "wb") as f:
            f.write(out)
        reg = registry.Registry(auth={"htpasswd": {"realm": "t", "path": pw}}).start()
        self.addCleanup(reg.stop)
        client = images.Client(reg.url, username="alice", password="4lice-pw")
        secret = "secret-%s" % os.urandom(8).hex()
        img = images.push_image(client, "team/private", "1.0",
                                [tools_layer(), os_release(secret)])
        ref = "%s/team/private:1.0" % reg.hostport
        alice = self.home("alice")
        cp = subprocess.run(["runuser", "-u", "nobody", "--", "env", "HOME=" + alice,
                             fpull.binary(), "login", "-u", "alice", "--password-stdin",
                             reg.hostport], input="4lice-pw\n", text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        cp = self.srun(["--fpull-image=" + ref, "cat", "/etc/kind"], env={"HOME": alice})
        self.assertEqual((cp.returncode, cp.stdout), (0, secret + "\n"), cp.stderr)
        # Another user, whose own credentials the registry refuses (none): exit 4, and
        # nothing of the image's.
        other = self.home("other", "daemon")
        gets = len(re.findall(r"GET /v2/team/private/blobs/", reg.log()))
        cp = self.srun(["--fpull-image=" + ref, "cat", "/etc/kind"], user="daemon",
                       env={"HOME": other})
        self.assertEqual(cp.returncode, 4, cp.stdout + cp.stderr)
        self.assertNotIn(secret, cp.stdout + cp.stderr)
        self.assertEqual(len(re.findall(r"GET /v2/team/private/blobs/", reg.log())), gets)
        for root, dirs, files in os.walk(other):
            # The cache's pin file (an empty lock file, fpull cache) holds nothing of it.
            for f in files:
                path = os.path.join(root, f)
                self.assertEqual((f, os.path.getsize(path)), (".pins", 0), path)
        self.assert_clean()

    def test_cached_image_runs_when_the_registry_is_down(self):
        home = self.home("home")
        cp = self.srun(["--fpull-image=" + self.other_ref, "cat", "/etc/kind"],
                       env={"HOME": home})
        self.assertEqual((cp.returncode, cp.stdout), (0, "other\n"), cp.stderr)
        self.reg.stop()
        cp = self.srun(["--fpull-image=" + self.other_ref, "cat", "/etc/kind"],
                       env={"HOME": home})
        self.assertEqual((cp.returncode, cp.stdout), (0, "other\n"), cp.stderr)
        warn = [ln for ln in cp.stderr.splitlines() if "warning" in ln]
        self.assertEqual(len(warn), 1, cp.stderr)
        self.assertRegex(warn[0], r"^fpull: %s: warning: %s: the registry cannot be reached: "
                                  r"running the cached %s \(\d+m\d\ds old\)$" % (
                                      slurm.NODE, re.escape(self.other_ref),
                                      self.other["digest"]))
        # --fpull-pull=always does not fall back.
        cp = self.srun(["--fpull-image=" + self.other_ref, "--fpull-pull=always", "true"],
                       env={"HOME": home})
        self.assertEqual(cp.returncode, 6, cp.stderr)
        # never: the cache only.
        cp = self.srun(["--fpull-image=" + self.other_ref, "--fpull-pull=never",
                        "cat", "/etc/kind"], env={"HOME": home})
        self.assertEqual((cp.returncode, cp.stdout), (0, "other\n"), cp.stderr)

    def test_steps_started_at_once_each_get_their_container(self):
        job, rec, out = self.submit(
            ["-n", "3", "-O"],
            "for i in 1 2 3; do srun --fpull-image=%s -n 1 --exact cat /etc/kind "
            ">%s/$SLURM_JOB_ID.$i & done\nwait\n" % (self.other_ref, self.cluster.outdir))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        for i in (1, 2, 3):
            with open(os.path.join(self.cluster.outdir, "%s.%d" % (job, i))) as f:
                self.assertEqual(f.read(), "other\n", out)
        self.assert_clean()

    def test_save_writes_the_image_as_squashfs_and_a_job_runs_it(self):
        if not shutil.which("unsquashfs"):
            self.skipTest("unsquashfs is not installed (Debian: squashfs-tools)")
        out = os.path.join(self.tmp, "saved")
        os.mkdir(out)
        shutil.chown(out, "nobody", None)
        sqsh = os.path.join(out, "app.sqsh")
        # A cache of the user's own, kept between jobs (nobody has no home).
        ucache = os.path.join(self.tmp, "ucache")
        os.mkdir(ucache)
        shutil.chown(ucache, "nobody", None)
        cp = self.srun(["--fpull-image=" + self.os_ref, "--fpull-features=x86-64-v2",
                        "--fpull-save=" + sqsh, "cat", "/etc/kind"], env={"FPULL_CACHE": ucache})
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-v2\n"), cp.stderr)
        self.assertIn(on_node("fpull: saved %s@%s to %s" % (
            self.os_ref, self.images["v2"]["digest"], sqsh)), cp.stderr)
        self.assertEqual(os.stat(sqsh).st_uid, slurm.NOBODY)
        listing = subprocess.run(["unsquashfs", "-cat", sqsh, "etc/kind"],
                                 stdout=subprocess.PIPE, text=True)
        self.assertEqual(listing.stdout, "image-v2\n")
        # The image config is in the file, where enroot keeps it (and names the entry).
        rc = subprocess.run(["unsquashfs", "-cat", sqsh, "etc/rc"], stdout=subprocess.PIPE,
                            text=True).stdout
        self.assertIn('\ncd "/tmp" && unset OLDPWD || exit 1\n', rc)
        self.assertTrue(rc.startswith("# enroot-provenance: docker://%s#hpc/os:1.0@%s\n" % (
            self.reg.hostport, self.images["v2"]["digest"])), rc)
        # A later job runs the saved file (extracted with unsquashfs: no registry) as the
        # image: its Env and WorkingDir. The digest stays unsaid: the file's provenance line
        # is no proof of what it holds.
        self.reg.stop()
        cp = self.srun(["--fpull-image=" + sqsh, "sh", "-c",
                        'cat /etc/kind; echo "digest=$FPULL_IMAGE_DIGEST kind=$APP_KIND"; pwd'],
                       env={"FPULL_CACHE": ucache})
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-v2\ndigest= kind=v2\n/tmp\n"),
                         cp.stderr)
        self.assertNotIn("warning", cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s \(a SquashFS file, %s\)$" % (
            sqsh, sqsh_route()))
        # The file records its entry (issue 41): this node covers it, but would choose the
        # x86-64-v3 entry of the index, which its cache holds, and says so in one line.
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s: this node would choose another "
                         r"entry of its index sha256:[0-9a-f]{64}: linux/amd64 x86-64-v3, "
                         r"manifest %s \(the file holds linux/amd64 x86-64-v2, manifest %s; "
                         % (sqsh, self.images["v3"]["digest"][:19],
                            self.images["v2"]["digest"][:19]))
        self.assert_clean()
        # A file that is no SquashFS fails the step.
        bad = os.path.join(out, "bad.sqsh")
        with open(bad, "w") as f:
            f.write("not squashfs")
        cp = self.srun(["--fpull-image=" + bad, "echo", "ran"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(on_node("fpull: %s: cannot be %s as a SquashFS file" % (
            bad, sqsh_route().split()[0])), cp.stderr)
        # Not a path: refused at submit.
        cp = self.srun(["--fpull-image=" + self.os_ref, "--fpull-save=app.sqsh", "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("fpull: --fpull-save=app.sqsh: not an absolute path", cp.stderr)

    def test_sqsh_of_an_entry_the_node_does_not_cover_is_refused(self):
        """Issue 41: a .sqsh records the entry it was made from (/.fpull/platform.json); a
        node whose features do not cover that entry refuses the file with exit 3, as a pull
        refuses the entry, in one line naming the node, the file and what it lacks; with
        --fpull-features that cover it, it runs."""
        if not shutil.which("unsquashfs"):
            self.skipTest("unsquashfs is not installed (Debian: squashfs-tools)")
        have = set(fpull.run_json(["features", "--config", self.config])[1]["features"])
        lack = next(f for f in ("x86-64-v4", "sapphirerapids", "graniterapids",
                                "amdgpu-gfx90a") if f not in have)
        far = images.push_image(self.client, "hpc/far", None, [tools_layer(), kind_layer("far")])
        near = images.push_image(self.client, "hpc/far", None, [tools_layer(), kind_layer("near")])
        images.push_index(self.client, "hpc/far", "1.0", [
            (near, {"os": "linux", "architecture": "amd64", "features": ["x86-64-v2"]}),
            (far, {"os": "linux", "architecture": "amd64", "features": [lack]})])
        out = os.path.join(self.tmp, "made")
        os.mkdir(out)
        os.chmod(out, 0o755)
        sqsh = os.path.join(out, "far.sqsh")
        fpull.run(["pull", "-q", "--format", "squashfs", "--cache-dir",
                   os.path.join(self.tmp, "rootcache"), "--features", lack,
                   "%s/hpc/far:1.0" % self.reg.hostport, sqsh], check=0)
        os.chmod(sqsh, 0o644)
        cp = self.srun(["--fpull-image=" + sqsh, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (3, ""), cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s: made from the entry linux/amd64 %s, "
                         r"manifest %s, which this node does not cover: lacks %s \(exit 3\)$" % (
                             re.escape(sqsh), re.escape(lack), far["digest"][:19], re.escape(lack)))
        self.assertNotIn("SquashFS file,", cp.stderr)
        self.assert_clean()
        # The node told it has the feature runs the file.
        cp = self.srun(["--fpull-image=" + sqsh, "--fpull-features=" + lack, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "far\n"), cp.stderr)
        self.assert_clean()

    def test_saved_file_keeps_the_entrypoint(self):
        """A file saved from an image with an Entrypoint runs it with --fpull-entrypoint, as
        the image does, and the command alone without."""
        if not shutil.which("unsquashfs"):
            self.skipTest("unsquashfs is not installed (Debian: squashfs-tools)")
        images.push_image(self.client, "hpc/ent", "1.0", [tools_layer(), os_release("ent")],
                          config_extra={"config": {"Entrypoint": ["/usr/bin/env", "FROM=it's"],
                                                   "Cmd": ["id"], "WorkingDir": "/usr/bin"}})
        out = os.path.join(self.tmp, "saved")
        os.mkdir(out)
        shutil.chown(out, "nobody", None)
        sqsh = os.path.join(out, "ent.sqsh")
        cp = self.srun(["--fpull-image=%s/hpc/ent:1.0" % self.reg.hostport,
                        "--fpull-save=" + sqsh, "cat", "/etc/kind"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        script = 'echo "${FROM:-none}"; pwd'
        cp = self.srun(["--fpull-image=" + sqsh, "--fpull-entrypoint", "sh", "-c", script])
        self.assertEqual((cp.returncode, cp.stdout), (0, "it's\n/usr/bin\n"), cp.stderr)
        cp = self.srun(["--fpull-image=" + sqsh, "sh", "-c", script])
        self.assertEqual((cp.returncode, cp.stdout), (0, "none\n/usr/bin\n"), cp.stderr)
        self.assert_clean()

    def test_sqsh_config_of_enroot_and_hostile_files(self):
        """A .sqsh made elsewhere (enroot import, pyxis's --container-save: an older enroot's
        /etc/rc) runs with its image config; one whose /etc/rc or /etc/environment is hostile
        (a link out of the image, too large, binary) runs with the defaults, each file said
        in one line, and nothing outside the image is read."""
        for tool in ("unsquashfs", "mksquashfs"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed (Debian: squashfs-tools)" % tool)
        root = os.path.join(self.tmp, "root")
        fpull.run(["pull", "-q", "--cache-dir", self.cache, self.other_ref, root], check=0)
        etc = os.path.join(root, "etc")
        # A valid rc and environment on the host, which only a link out of the image reaches.
        host_rc = os.path.join(self.tmp, "host-rc")
        with open(host_rc, "w") as f:
            f.write('cd "/proc" || exit 1\nif [ $# -gt 0 ]; then\n exec "$@"\nelse\n'
                    ' exec id\nfi\n')
        os.chmod(host_rc, 0o644)
        variants = {
            "enroot": {"rc": "# enroot-provenance: docker://hpc/other\n\n"
                             'cd "/etc" || exit 1\n\nif [ -s /etc/rc.local ]; then\n'
                             "    . /etc/rc.local\nfi\n\nif [ $# -gt 0 ]; then\n"
                             "    exec '/usr/bin/env' 'FROM=rc' \"$@\"\nelse\n"
                             "    exec '/usr/bin/env' 'FROM=rc' '/bin/sh'\nfi\n",
                       "environment": '# from the image\nAPP="a value"\nDISPLAY=${DISPLAY}\n'},
            "links": {"rc": ("link", host_rc), "environment": ("link", "/etc/shadow")},
            "big": {"rc": "#" * (300 << 10) + "\n", "environment": "A=1\0B=2\n"},
        }
        files = {}
        for name, v in variants.items():
            for f in ("rc", "environment"):
                p = os.path.join(etc, f)
                if os.path.lexists(p):
                    os.unlink(p)
                if isinstance(v[f], tuple):
                    os.symlink(v[f][1], p)
                else:
                    with open(p, "w") as fh:
                        fh.write(v[f])
            files[name] = os.path.join(self.tmp, name + ".sqsh")
            subprocess.run(["mksquashfs", root, files[name], "-quiet", "-noappend"],
                           check=True, stdout=subprocess.DEVNULL)
            os.chmod(files[name], 0o644)
        script = 'pwd; echo "${FROM:-none} ${APP:-none}"'
        cp = self.srun(["--fpull-image=" + files["enroot"], "--fpull-entrypoint", "sh", "-c",
                        script])
        self.assertEqual((cp.returncode, cp.stdout), (0, "/etc\nrc a value\n"), cp.stderr)
        self.assertNotIn("warning", cp.stderr)
        cp = self.srun(["--fpull-image=" + files["links"], "--fpull-entrypoint", "sh", "-c",
                        script])
        self.assertEqual((cp.returncode, cp.stdout), (0, "/\nnone none\n"), cp.stderr)
        warn = [ln for ln in cp.stderr.splitlines() if "warning" in ln]
        self.assertEqual(warn, [on_node(ln) for ln in (
            "fpull: warning: %s: /etc/environment: a symbolic link to /etc/shadow, which is "
            "nothing in the image: No such file or directory: the image's Env is not used"
            % files["links"],
            "fpull: warning: %s: /etc/rc: a symbolic link to %s, which is nothing in the image: "
            "No such file or directory: the image's WorkingDir and Entrypoint are not used"
            % (files["links"], host_rc))], cp.stderr)
        cp = self.srun(["--fpull-image=" + files["big"], "sh", "-c", script])
        self.assertEqual((cp.returncode, cp.stdout), (0, "/\nnone none\n"), cp.stderr)
        warn = [ln for ln in cp.stderr.splitlines() if "warning" in ln]
        self.assertEqual(warn, [on_node(ln) for ln in (
            "fpull: warning: %s: /etc/environment: not text (a NUL byte at offset 3): the "
            "image's Env is not used" % files["big"],
            "fpull: warning: %s: /etc/rc: over 256 KiB: the image's WorkingDir and Entrypoint "
            "are not used" % files["big"])], cp.stderr)
        self.assert_clean()

    def test_failed_task_leaves_no_container_behind(self):
        cp = self.srun(["--fpull-image=" + self.other_ref, "--fpull-workdir=/nonexistent",
                        "echo", "ran"])
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(on_node("fpull: working directory /nonexistent: No such file or "
                              "directory (exit 1: failure)"), cp.stderr)
        self.assert_clean()

    def test_steps_trees_go_with_the_steps(self):
        # A long job's steps do not pile up trees: each goes with its step.
        job, rec, out = self.submit([], "srun --fpull-image={0} cat /etc/kind\n"
                                        "srun --fpull-image={0} cat /etc/kind\n"
                                        # srun returns when the tasks end; slurmstepd's
                                        # exit, which removes the tree, may still run.
                                        "d={1}/$SLURM_JOB_ID\n"
                                        "for i in $(seq 100); do [ \"$(ls $d)\" = cache ] && "
                                        "break; sleep 0.1; done\n"
                                        "ls $d\n".format(self.other_ref, self.run_dir))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        # The job's directory holds the pull's cache (nobody has no home), no step's tree.
        # (Slurm's own "srun: ... step creation temporarily disabled" lines aside.)
        self.assertEqual([ln for ln in out.splitlines() if not ln.startswith(("fpull: ", "srun: "))],
                         ["other", "other", "cache"], out)

    def test_home_is_mounted_unless_asked_not_to(self):
        home = self.home("h")
        with open(os.path.join(home, "mine"), "w") as f:
            f.write("x")
        script = 'ls "$HOME"; pwd'
        cp = self.srun(["--fpull-image=" + self.other_ref, "sh", "-c", script],
                       env={"HOME": home})
        self.assertEqual((cp.returncode, cp.stdout), (0, "mine\n/\n"), cp.stderr)
        cp = self.srun(["--fpull-image=" + self.other_ref, "--no-fpull-mount-home",
                        "--fpull-workdir=/etc", "sh", "-c", script], env={"HOME": home})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines()[-1], "/etc", cp.stdout)
        self.assertNotIn("mine", cp.stdout)

    def test_epilog_leaves_nothing_behind(self):
        # The step's tree, its runtime state and the job's cache (nobody has no home) are
        # gone when the job is; nothing is left mounted.
        job, rec, out = self.submit([], "srun --fpull-image={0} cat /etc/kind\n"
                                        "srun --fpull-image={0} -n 2 cat /etc/kind\n".format(
                                            self.other_ref))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assert_clean()
        with open("/proc/self/mountinfo") as f:
            self.assertNotIn(self.run_dir, f.read())

    def test_epilog_never_hangs_on_a_fuse_mount_left_in_the_job_dir(self):
        # A daemonized squashfuse left mounted in the job's directory, its daemon stopped:
        # anything that enters the mount hangs. The epilog unmounts it lazily and removes
        # the rest without entering it (issue 20). (The test mounts it as root: /dev/fuse
        # is root's on this machine.)
        for tool in ("squashfuse", "mksquashfs"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed" % tool)
        src = os.path.join(self.tmp, "sqsrc")
        os.mkdir(src)
        with open(os.path.join(src, "f"), "w") as f:
            f.write("x\n")
        sqsh = os.path.join(self.tmp, "img.sqsh")
        subprocess.run(["mksquashfs", src, sqsh, "-quiet", "-noappend"], check=True,
                       stdout=subprocess.DEVNULL)
        ready = os.path.join(self.cluster.outdir, "ready-%s" % os.urandom(4).hex())
        go = ready + ".go"
        cp, job = self.cluster.sbatch(
            [],
            'srun --fpull-image=%s true\nmkdir %s/$SLURM_JOB_ID/mnt && touch %s\n'
            'while [ ! -e %s ]; do sleep 0.2; done\n' % (self.other_ref, self.run_dir, ready, go))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        for _ in range(300):
            if os.path.exists(ready):
                break
            time.sleep(0.2)
        self.assertTrue(os.path.exists(ready), self.cluster.output(job) + self.cluster.logs())
        mnt = os.path.join(self.run_dir, job, "mnt")
        fuse = subprocess.Popen(["squashfuse", "-f", sqsh, mnt])
        self.addCleanup(fuse.wait)
        self.addCleanup(fuse.kill)
        self.addCleanup(os.kill, fuse.pid, signal.SIGCONT)
        for _ in range(100):
            with open("/proc/self/mountinfo") as f:
                if mnt in f.read():
                    break
            time.sleep(0.1)
        os.kill(fuse.pid, signal.SIGSTOP)
        open(go, "w").close()
        rec = self.cluster.wait(job)
        self.assertEqual(rec["JobState"], "COMPLETED", self.cluster.output(job))
        self.assert_clean()
        with open("/proc/self/mountinfo") as f:
            self.assertNotIn(self.run_dir, f.read())


class SlurmFixture(SlurmCase):
    def test_stop_ends_every_daemon(self):
        c = self.start_cluster()
        pids = {n: p.pid for n, p in c.procs.items()}
        self.assertEqual(sorted(pids), ["munged", "slurmctld", "slurmd"])
        c.stop()
        for name, pid in pids.items():
            with self.assertRaises(ProcessLookupError, msg=name):
                os.kill(pid, 0)


class SlurmProlog(SlurmCase):
    """contrib/slurm/prolog.sh as Slurm's Prolog, for sites without the plugin."""

    def setUp(self):
        super().setUp()
        # Slurm gives the Prolog no environment of ours: a site wrapper sets the settings.
        self.wrapper = os.path.join(self.tmp, "prolog")
        self.prolog_log = os.path.join(self.tmp, "prolog.log")
        with open(self.wrapper, "w") as f:
            f.write("#!/bin/sh\nFPULL=%s FPULL_PROLOG_CACHE=%s FPULL_DATA_DIR=%s "
                    "FPULL_CONFIG=%s FPULL_PROLOG_LOG=%s FPULL_PROLOG_REGISTRIES=%s exec %s\n" % (
                        fpull.binary(), self.cache, DATA_DIR, self.config, self.prolog_log,
                        self.reg.hostport, PROLOG))
        os.chmod(self.wrapper, 0o755)
        self.cluster = self.start_cluster(prolog=self.wrapper)

    def job_script(self, kind_features, image):
        return ('d=$(mktemp -d)\n'
                '%s pull -q --offline --cache-dir %s --features %s %s "$d/rootfs" || exit\n'
                'cat "$d/rootfs/etc/kind"\n'
                'rm -rf "$d"\n' % (fpull.binary(), self.cache, kind_features, image))

    def test_prolog_prefetches_and_the_job_pulls_offline(self):
        for kind in ("v2", "v3"):
            feats = "x86-64-" + kind
            cp, job = self.cluster.sbatch(
                ["--comment", "fpull-image=%s fpull-features=%s" % (self.ref, feats)],
                self.job_script(feats, self.ref))
            self.assertEqual(cp.returncode, 0, cp.stderr)
            rec = self.cluster.wait(job)
            out = self.cluster.output(job)
            self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
            self.assertEqual(out.strip(), kind)
        self.assertEqual(stat.S_IMODE(os.stat(self.cache).st_mode), 0o755)
        gets = self.blob_gets()
        for img in (self.v2, self.v3):
            for l in img["layers"]:
                self.assertEqual(gets.get(l["digest"]), 1, gets)

    def test_bad_image_in_prolog_fails_the_job_not_the_node(self):
        bad = "%s/hpc/app:nope" % self.reg.hostport
        cp, job = self.cluster.sbatch(["--comment", "fpull-image=" + bad],
                                      self.job_script("x86-64-v2", bad))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        out = self.cluster.output(job)
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertEqual(rec["ExitCode"], "5:0", out)
        self.assertIn("not in the cache", fpull.error_line(out))
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        # The prolog said why in its log.
        with open(self.prolog_log) as f:
            self.assertRegex(f.read(), r"fpull-prolog: job %s: %s: exit 5: fpull: " % (
                job, re.escape(bad)))


class SlurmGpuHook(SlurmCase):
    """nvidia_hook=: the container's prestart hook, with the job's GPUs (a stand-in hook that
    records how it was called: no GPU on this machine)."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.calls = os.path.join(self.tmp, "calls")
        os.mkdir(self.calls)
        os.chmod(self.calls, 0o1777)
        self.hook = os.path.join(self.tmp, "nvidia-hook")
        with open(self.hook, "w") as f:
            f.write('#!/bin/sh\nd=%s/$$\n{ echo "args=$*"; echo "uid=$(id -u)"; '
                    'echo "visible=$NVIDIA_VISIBLE_DEVICES"; cat; echo; } >"$d"\n' % self.calls)
        os.chmod(self.hook, 0o755)
        images.push_image(self.client, "hpc/gpu", "1.0", [tools_layer(), os_release("gpu")])
        self.gpu_ref = "%s/hpc/gpu:1.0" % self.reg.hostport
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                         "nvidia_hook=" + self.hook])

    def srun(self, env, *args):
        return self.cluster._cmd(["env"] + ["%s=%s" % kv for kv in env.items()] +
                                 ["srun", "--fpull-image=" + self.gpu_ref] + list(args),
                                 check=False, user="nobody")

    def test_hook_gets_the_jobs_gpus(self):
        cp = self.srun({"CUDA_VISIBLE_DEVICES": "0,2"}, "sh", "-c",
                       'echo "cuda=$CUDA_VISIBLE_DEVICES"; cat /etc/kind')
        self.assertEqual((cp.returncode, cp.stdout), (0, "cuda=0,2\ngpu\n"), cp.stderr)
        calls = os.listdir(self.calls)
        self.assertEqual(len(calls), 1, calls)
        with open(os.path.join(self.calls, calls[0])) as f:
            args, uid, visible, state = f.read().split("\n", 3)
        self.assertEqual(args, "args=prestart")
        self.assertEqual(uid, "uid=%d" % slurm.NOBODY)
        self.assertEqual(visible, "visible=0,2")
        state = json.loads(state)
        self.assertTrue(state["bundle"].startswith(self.run_dir + "/"), state)
        self.assertGreater(state["pid"], 1)

    def test_no_gpus_no_hook(self):
        cp = self.srun({}, "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "gpu\n"), cp.stderr)
        self.assertEqual(os.listdir(self.calls), [])


def own_namespace_prefix(commands):
    """A slurmd_prefix that runs slurmd in a mount namespace of its own, changed first by
    COMMANDS (shell, as root): for slurmd and its jobs only; the host's mounts stay."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'set -e; %s; exec "$@"' % commands, "sh"]


def dev_overlay_prefix(tmp, commands):
    """own_namespace_prefix with /dev an overlay on the host's, changed by COMMANDS: device
    nodes a node has and this VM lacks; the host's /dev is untouched."""
    ovl = os.path.join(tmp, "devovl")
    for d in ("old", "upper", "work"):
        os.makedirs(os.path.join(ovl, d))
    return own_namespace_prefix(
        ('mount --rbind /dev {o}/old; '
         'mount -t overlay overlay -o lowerdir={o}/old,upperdir={o}/upper,workdir={o}/work /dev; '
         'for m in pts shm mqueue; do [ -d {o}/old/$m ] && '
         'mount --rbind {o}/old/$m /dev/$m || true; done; {c}').format(o=ovl, c=commands))


def sqsh_route():
    """How the plugin runs a .sqsh image on this node for nobody: mounted where the tools
    are there and /dev/fuse is open to users (Debian's default), else unpacked."""
    try:
        fuse_open = os.stat("/dev/fuse").st_mode & 0o006 == 0o006
    except OSError:
        fuse_open = False
    tools = all(shutil.which(t) for t in ("squashfuse", "fuse-overlayfs", "fusermount3"))
    return "mounted with squashfuse" if fuse_open and tools else "unpacked with unsquashfs"


class SlurmGpuNode(SlurmCase):
    """A node with GPUs (device nodes as the drivers make them): NVIDIA's without an
    nvidia_hook= in plugstack.conf, and AMD's /dev/kfd and render node."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        images.push_image(self.client, "hpc/gpu", "1.0", [tools_layer(), os_release("gpu")])
        self.gpu_ref = "%s/hpc/gpu:1.0" % self.reg.hostport
        # The node's /dev, for slurmd and its jobs only, gains the NVIDIA control device
        # (major 195, minor 255, as the driver makes it), AMD's /dev/kfd and a render node.
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary()],
            slurmd_prefix=dev_overlay_prefix(
                self.tmp, "mknod -m 666 /dev/nvidiactl c 195 255; "
                          "mknod -m 666 /dev/kfd c 234 0; mkdir -p /dev/dri; "
                          "mknod -m 666 /dev/dri/renderD128 c 226 128"))

    def test_gpus_without_a_hook_say_what_to_install(self):
        self.assertFalse(os.path.exists("/dev/nvidiactl"))  # only slurmd's /dev has it
        cp = self.cluster._cmd(["env", "CUDA_VISIBLE_DEVICES=0", "srun",
                                "--fpull-image=" + self.gpu_ref, "cat", "/etc/kind"],
                               check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "gpu\n"), cp.stderr)
        warn = [ln for ln in cp.stderr.splitlines() if "nvidia_hook" in ln]
        self.assertEqual(warn, [on_node(
            "fpull: warning: the job has GPUs (0) but the container gets none: the site's "
            "plugstack.conf names no nvidia_hook= (install the NVIDIA Container Toolkit and "
            "give nvidia_hook=/usr/bin/nvidia-container-runtime-hook)")], cp.stderr)
        # Without GPUs in the job, nothing is said.
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.gpu_ref, "cat", "/etc/kind"],
                               check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "gpu\n"), cp.stderr)
        self.assertNotIn("nvidia_hook", cp.stderr)

    def test_amd_devices_reach_the_tasks(self):
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.gpu_ref, "stat", "-c",
                                "%n %F %t:%T", "/dev/kfd", "/dev/dri/renderD128"],
                               check=False, user="nobody")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines(), ["/dev/kfd character special file ea:0",
                                                  "/dev/dri/renderD128 character special "
                                                  "file e2:80"])


class SlurmSqshMount(SlurmCase):
    """--fpull-image=/PATH.sqsh on a node where users may mount FUSE file systems (Debian's
    /dev/fuse is 0666; this VM's is 0600, so slurmd's own /dev gets Debian's mode): the
    file is mounted with squashfuse under a fuse-overlayfs layer, as enroot does, not
    copied."""

    def setUp(self):
        super().setUp()
        self.require_plugin()
        for tool in ("runc", "squashfuse", "fuse-overlayfs", "fusermount3"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed (Debian: runc squashfuse fuse-overlayfs "
                              "fuse3)" % tool)
        if not os.path.exists("/dev/fuse"):
            self.skipTest("no /dev/fuse: the kernel has no FUSE")
        ref = "%s/hpc/sq:1.0" % self.reg.hostport
        images.push_image(self.client, "hpc/sq", "1.0", [tools_layer(), os_release("sq")],
                          config_extra={"config": {"Env": ["PATH=/usr/bin:/bin", "SQ=mounted"],
                                                   "WorkingDir": "/etc"}})
        self.sqsh = os.path.join(self.tmp, "sq.sqsh")
        cp = fpull.run(["pull", "-q", "--format", "squashfs", "--cache-dir", self.cache, ref,
                        self.sqsh], check=0)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        os.chmod(self.sqsh, 0o644)
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary()],
            slurmd_prefix=dev_overlay_prefix(self.tmp, "chmod 666 /dev/fuse"))

    def srun(self, *args):
        return self.cluster._cmd(["srun"] + list(args), check=False, user="nobody")

    def node_mounts(self):
        """The mounts under run_dir that slurmd's mount namespace (the jobs') has, once the
        node is idle again (srun returns before the step's end has run)."""
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        with open("/proc/%d/mountinfo" % self.cluster.procs["slurmd"].pid) as f:
            return [ln.split()[4] for ln in f if ln.split()[4].startswith(self.run_dir + "/")]

    def test_image_is_mounted_and_writable_through_the_overlay(self):
        size = os.path.getsize(self.sqsh)
        cp = self.srun("-n", "2", "-O", "--fpull-image=" + self.sqsh, "sh", "-c",
                       'cat /etc/kind; echo "$SLURM_PROCID" >/tmp/t$SLURM_PROCID; '
                       'cat /tmp/t$SLURM_PROCID; stat -c %u /etc/kind')
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        # The image's files are the user's, as unsquashfs run by the user would make them.
        self.assertEqual(sorted(cp.stdout.splitlines()),
                         sorted(["sq", "sq", "0", "1", str(slurm.NOBODY), str(slurm.NOBODY)]),
                         cp.stdout)
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s \(a SquashFS file, mounted with "
                                    r"squashfuse\)$" % re.escape(self.sqsh))
        # The task's / is the overlay on the mounted file; the image config is read from
        # the file's /etc/environment and /etc/rc through it.
        cp = self.srun("--fpull-image=" + self.sqsh, "sh", "-c",
                       'echo "$SQ $(pwd)"; cat /proc/self/mountinfo')
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines()[0], "mounted /etc", cp.stdout)
        root = [ln.split(" - ")[1].split()[0] for ln in cp.stdout.splitlines()[1:]
                if ln.split()[4] == "/"]
        self.assertEqual(root, ["fuse.fuse-overlayfs"], cp.stdout)
        # The file itself is untouched, and when the steps are done nothing stays mounted.
        self.assertEqual(os.path.getsize(self.sqsh), size)
        self.assertEqual(self.node_mounts(), [])
        self.assertEqual(holders(self.run_dir), [])

    def test_format_squashfs_pulls_one_file_and_mounts_it(self):
        # A registry image as one SquashFS file in the step's directory, mounted: its Env and
        # WorkingDir apply as for an unpacked tree.
        img = images.push_image(self.client, "hpc/sqenv", "1.0",
                                [tools_layer(), os_release("sqenv")],
                                config_extra={"config": {"Env": ["PATH=/usr/bin:/bin",
                                                                 "APP=from-image"],
                                                         "WorkingDir": "/etc"}})
        ref = "%s/hpc/sqenv:1.0" % self.reg.hostport
        cp = self.srun("--fpull-image=" + ref, "--fpull-format=squashfs", "--no-fpull-mount-home",
                       "sh", "-c", 'cat /etc/kind; echo "$APP $FPULL_IMAGE_DIGEST"; pwd; '
                                   'echo --; cat /proc/self/mountinfo; echo --; ls /')
        self.assertEqual(cp.returncode, 0, cp.stderr + self.cluster.logs())
        head, mountinfo, top = cp.stdout.split("--\n")
        self.assertEqual(head.splitlines(), ["sqenv", "from-image " + img["digest"], "/etc"],
                         cp.stdout)
        root = [ln.split(" - ")[1].split()[0] for ln in mountinfo.splitlines()
                if ln.split()[4] == "/"]
        self.assertEqual(root, ["fuse.fuse-overlayfs"], mountinfo)
        # Only the image's own top level: the SquashFS file and its mounts are not inside.
        self.assertIn("etc", top.split())
        self.assertNotIn("image.sqsh", top.split())
        self.assertRegex(cp.stderr, r"(?m)^fpull: [^ ]+: %s: %s " % (re.escape(ref),
                                                                     img["digest"]))
        self.assertEqual(self.node_mounts(), [])
        self.assertEqual(holders(self.run_dir), [])

    def test_a_relative_sqsh_path_is_a_file_in_the_working_directory(self):
        # pyxis's habit: --fpull-image=app.sqsh is that file, never docker.io/library/app.sqsh.
        work = os.path.join(self.tmp, "work")
        os.mkdir(work, 0o755)
        shutil.copy(self.sqsh, os.path.join(work, "app.sqsh"))
        os.chmod(os.path.join(work, "app.sqsh"), 0o644)
        cp = self.cluster._cmd(["sh", "-c", "cd %s && srun --fpull-image=app.sqsh cat /etc/kind"
                                % work], check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "sq\n"), cp.stderr)
        self.assertIn("%s/app.sqsh (a SquashFS file" % work, cp.stderr)
        cp = self.cluster._cmd(["sh", "-c", "cd %s && srun --fpull-image=nope.sqsh true" % work],
                               check=False, user="nobody")
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("--fpull-image=nope.sqsh: No such file or directory", cp.stderr)
        self.assertNotIn("docker.io", cp.stderr)

    def test_a_file_that_is_no_squashfs_fails_the_step(self):
        bad = os.path.join(self.tmp, "bad.sqsh")
        with open(bad, "w") as f:
            f.write("not squashfs")
        os.chmod(bad, 0o644)
        cp = self.srun("--fpull-image=" + bad, "echo", "ran")
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(on_node("fpull: %s: cannot be mounted as a SquashFS file (squashfuse" %
                              bad), cp.stderr)
        self.assertEqual(self.node_mounts(), [])

    def test_batch_job_steps_and_the_epilog(self):
        # The script in the mounted image, then a host script's steps in it.
        for options, script, want in (
                (["--fpull-image=" + self.sqsh], "cat /etc/kind\n", ["sq"]),
                ([], "srun --fpull-image={0} cat /etc/kind\n"
                     "srun --fpull-image={0} -n 2 cat /etc/kind\n".format(self.sqsh),
                 ["sq", "sq", "sq"])):
            job, rec = self.cluster.sbatch(options, script, user="nobody")
            self.assertEqual(job.returncode, 0, job.stderr)
            state = self.cluster.wait(rec)
            out = self.cluster.output(rec)
            self.assertEqual(state["JobState"], "COMPLETED", out + self.cluster.logs())
            # (Slurm's own "srun: ... step creation temporarily disabled" lines aside.)
            self.assertEqual([ln for ln in out.splitlines()
                              if not ln.startswith(("fpull: ", "srun: "))], want, out)
        self.assertEqual(self.node_mounts(), [])
        # The user's store (kept images, on by default where /dev/fuse is the users') stays.
        self.assertEqual([e for e in (os.listdir(self.run_dir) if os.path.isdir(self.run_dir)
                                      else []) if e != "store"], [])


class SlurmSiteSettings(SlurmCase):
    """The site's plugstack arguments: mounts= for every container, env_passthrough= names
    that keep the job's value, mount_home=no as the default, pull=never."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.scratch = os.path.join(self.tmp, "scratch")
        os.mkdir(self.scratch)
        with open(os.path.join(self.scratch, "site-file"), "w") as f:
            f.write("from the site\n")
        images.push_image(self.client, "hpc/site", "1.0", [tools_layer(), os_release("site")],
                          config_extra={"config": {"Env": ["APP_MODE=image", "OTHER=image"]}})
        self.site_ref = "%s/hpc/site:1.0" % self.reg.hostport
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                         "mounts=%s:/scratch:ro" % self.scratch, "env_passthrough=APP_MODE",
                         "mount_home=no", "pull=never"])

    def srun(self, env, *args):
        return self.cluster._cmd(["env"] + ["%s=%s" % kv for kv in env.items()] +
                                 ["srun"] + list(args), check=False, user="nobody")

    def test_site_mounts_env_and_defaults(self):
        home = os.path.join(self.tmp, "home")
        os.mkdir(home)
        shutil.chown(home, "nobody", None)
        # pull=never: nothing is in the cache yet, so the step fails without asking.
        gets = len(self.blob_gets())
        cp = self.srun({"HOME": home}, "--fpull-image=" + self.site_ref, "true")
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertEqual(len(self.blob_gets()), gets)
        # --fpull-pull overrides the site's default.
        cp = self.srun({"HOME": home, "APP_MODE": "job", "OTHER": "job"},
                       "--fpull-image=" + self.site_ref, "--fpull-pull=missing", "sh", "-c",
                       'cat /scratch/site-file; echo "$APP_MODE $OTHER"; '
                       'test -d "$HOME" && echo home || echo no-home; '
                       'touch /scratch/x 2>/dev/null || echo ro')
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines(), ["from the site", "job image", "no-home", "ro"],
                         cp.stderr)
        # --fpull-mount-home overrides mount_home=no.
        cp = self.srun({"HOME": home}, "--fpull-image=" + self.site_ref, "--fpull-mount-home",
                       "sh", "-c", 'test -d "$HOME" && echo home')
        self.assertEqual((cp.returncode, cp.stdout), (0, "home\n"), cp.stderr)


class SlurmStore(SlurmCase):
    """store_max=: a user's unpacked images are kept on the node between jobs, least
    recently used evicted first, never while a step uses one."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        tools = tools_layer()
        self.a = images.push_image(self.client, "hpc/a", "1.0", [tools, os_release("a")])
        self.b = images.push_image(self.client, "hpc/b", "1.0", [tools, os_release("b")])
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        shutil.chown(self.home, "nobody", None)

    def start(self, store_max):
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                         "store_max=" + store_max],
            # Each step writes into a fuse-overlayfs layer of its own over the kept tree:
            # a /dev/fuse users may open, as Debian's (this VM's is root's only).
            slurmd_prefix=dev_overlay_prefix(self.tmp, "chmod 666 /dev/fuse"))

    def srun(self, image, *cmd):
        return self.cluster._cmd(["env", "HOME=" + self.home, "srun",
                                  "--fpull-image=%s/%s" % (self.reg.hostport, image)] +
                                 list(cmd), check=False, user="nobody")

    def kept(self):
        store = os.path.join(self.run_dir, "store", str(slurm.NOBODY))
        return sorted(n for n in os.listdir(store) if "." not in n)

    def test_entrypoint_of_a_kept_image_without_a_cache(self):
        """--fpull-entrypoint reads the image config from the cache the pull filled; a kept
        image is not pulled again, and a user with no home has a cache per job: then the
        config is fetched."""
        entry = [{"path": "entry.sh", "mode": 0o755,
                  "data": "#!/bin/sh\necho entrypoint-ran\nexec \"$@\"\n"}]
        images.push_image(self.client, "hpc/e", "1.0",
                          [tools_layer(), os_release("e"), entry],
                          config_extra={"config": {"Entrypoint": ["/entry.sh"]}})
        self.start("1G")
        argv = ["srun", "--fpull-image=%s/hpc/e:1.0" % self.reg.hostport, "--fpull-entrypoint",
                "cat", "/etc/kind"]
        for run in ("first", "kept"):
            cp = self.cluster._cmd(argv, check=False, user="nobody")  # HOME=/nonexistent
            self.assertEqual((cp.returncode, cp.stdout), (0, "entrypoint-ran\ne\n"),
                             run + ": " + cp.stderr)
        self.assertIn("is kept on this node", cp.stderr)

    def test_second_job_does_not_unpack_again(self):
        self.start("1G")
        cp = self.srun("hpc/a:1.0", "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "a\n"), cp.stderr)
        self.assertNotIn("is kept on this node", cp.stderr)
        hexa = self.a["digest"].split(":")[1]
        self.assertEqual(self.kept(), [hexa])
        kind = os.path.join(self.run_dir, "store", str(slurm.NOBODY), hexa, "rootfs", "etc",
                            "kind")
        ino = os.stat(kind).st_ino
        cp = self.srun("hpc/a:1.0", "sh", "-c", 'cat /etc/kind; echo "$FPULL_IMAGE_DIGEST"')
        self.assertEqual((cp.returncode, cp.stdout), (0, "a\n%s\n" % self.a["digest"]),
                         cp.stderr)
        self.assertIn("is kept on this node: not unpacked again", cp.stderr)
        self.assertNotIn("done: ", cp.stderr)
        self.assertEqual(os.stat(kind).st_ino, ino)
        # The job's directory goes; the kept tree stays, the user's only.
        self.assertEqual(self.cluster.settled_node_state(), "idle")
        self.assertEqual(sorted(os.listdir(self.run_dir)), ["store"])
        st = os.stat(os.path.join(self.run_dir, "store", str(slurm.NOBODY)))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (slurm.NOBODY, 0o700))
        self.assertEqual(holders(self.run_dir), [])

    def test_no_change_leaks_from_one_job_to_the_next(self):
        # A kept tree is never written: each step writes into a layer of its own over it.
        self.start("1G")
        cp = self.srun("hpc/a:1.0", "sh", "-c",
                       "echo changed >/etc/kind; touch /etc/leak; cat /etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "changed\n"), cp.stderr)
        hexa = self.a["digest"].split(":")[1]
        etc = os.path.join(self.run_dir, "store", str(slurm.NOBODY), hexa, "rootfs", "etc")
        with open(os.path.join(etc, "kind")) as f:
            self.assertEqual(f.read(), "a\n")
        self.assertFalse(os.path.exists(os.path.join(etc, "leak")))
        cp = self.srun("hpc/a:1.0", "sh", "-c",
                       'cat /etc/kind; ls /etc/leak 2>/dev/null || echo no-leak; '
                       'echo "$FPULL_IMAGE_DIGEST"')
        self.assertEqual((cp.returncode, cp.stdout),
                         (0, "a\nno-leak\n%s\n" % self.a["digest"]), cp.stderr)
        self.assertIn("is kept on this node: not unpacked again", cp.stderr)
        # --fpull-readonly: the image itself is the root, and nothing can write it.
        cp = self.srun("hpc/a:1.0", "--fpull-readonly", "sh", "-c",
                       "touch /etc/x 2>/dev/null && echo wrote || echo read-only")
        self.assertEqual((cp.returncode, cp.stdout), (0, "read-only\n"), cp.stderr)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(sorted(os.listdir(self.run_dir)), ["store"])
        self.assertEqual(holders(self.run_dir), [])

    def test_batch_script_in_a_kept_image_leaves_it_untouched(self):
        # The script's mount point (slurmd's spool path) and the home's are made in the
        # step's layer, never in the kept tree; read-only too.
        self.start("1G")
        cp = self.srun("hpc/a:1.0", "cat", "/etc/kind")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        hexa = self.a["digest"].split(":")[1]
        rootfs = os.path.join(self.run_dir, "store", str(slurm.NOBODY), hexa, "rootfs")

        def tree():
            return sorted(os.path.join(d, n) for d, dirs, files in os.walk(rootfs)
                          for n in dirs + files)
        before = tree()
        for options in ([], ["--fpull-readonly"]):
            cp, job = self.cluster.sbatch(
                ["--fpull-image=%s/hpc/a:1.0" % self.reg.hostport] + options,
                'cat /etc/kind; touch /x 2>/dev/null && echo rw || echo ro\n')
            self.assertEqual(cp.returncode, 0, cp.stderr)
            rec = self.cluster.wait(job)
            out = self.cluster.output(job)
            self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
            self.assertEqual([ln for ln in out.splitlines() if not ln.startswith("fpull: ")],
                             ["a", "ro" if options else "rw"], out)
            self.assertEqual(tree(), before, options)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(holders(self.run_dir), [])

    def test_least_recently_used_is_evicted_never_one_in_use(self):
        self.start("1")  # one byte: only the tree in use stays
        cp = self.srun("hpc/a:1.0", "cat", "/etc/kind")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        hexa, hexb = self.a["digest"].split(":")[1], self.b["digest"].split(":")[1]
        self.assertEqual(self.kept(), [hexa])
        # While a job runs in a, a job with b evicts nothing of a.
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "env", "HOME=" + self.home,
                              "srun", "-J", "holda", "--fpull-image=%s/hpc/a:1.0" %
                              self.reg.hostport, "sh", "-c", "echo up; sleep 300"],
                             env=self.cluster.env(), stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline(), "up\n")
        cp = self.cluster._cmd(["srun", "--overlap", "--jobid",
                                self.cluster._cmd(["squeue", "-h", "-n", "holda", "-o", "%i"]
                                                  ).stdout.strip(),
                                "--fpull-image=%s/hpc/b:1.0" % self.reg.hostport,
                                "cat", "/etc/kind"], check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "b\n"), cp.stderr)
        self.assertEqual(self.kept(), sorted([hexa, hexb]))
        self.cluster._cmd(["scancel", "-n", "holda"])
        p.wait(timeout=60)
        self.assertEqual(self.cluster.settled_node_state(), "idle")
        # Now a is no one's: the next job with b evicts it.
        cp = self.srun("hpc/b:1.0", "cat", "/etc/kind")
        self.assertEqual((cp.returncode, cp.stdout), (0, "b\n"), cp.stderr)
        self.assertEqual(self.kept(), [hexb])


class SlurmPlugstack(SlurmCase):
    def test_typo_in_plugstack_conf_is_named(self):
        self.require_plugin()
        # Named where it is used, and nothing else fails: slurmd starts, jobs without
        # --fpull-image run.
        c = self.start_cluster(plugin=PLUGIN, plugin_args=["run_dri=/run/x", "pull=nwer"])
        want = ("fpull: plugstack.conf: unknown plugin argument 'run_dri' (did you mean "
                "'run_dir='?)")
        self.assertIn(want, c.log("slurmd.log"))
        cp = c._cmd(["srun", "echo", "plain"], check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "plain\n"), cp.stderr)
        cp = c._cmd(["srun", "--fpull-image=" + self.ref, "echo", "ran"], check=False,
                    user="nobody")
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(want, cp.stderr)

    def test_one_directory_for_the_sqsh_store_and_the_shared_cache_is_refused(self):
        self.require_plugin()
        c = self.start_cluster(plugin=PLUGIN, plugin_args=["sqsh_store=/scratch/fpull",
                                                           "shared_cache=/scratch/fpull"])
        want = ("fpull: plugstack.conf: plugin arguments sqsh_store= and shared_cache= name one "
                "directory (/scratch/fpull): give each its own")
        self.assertIn(want, c.log("slurmd.log"))
        cp = c._cmd(["srun", "--fpull-image=" + self.ref, "echo", "ran"], check=False,
                    user="nobody")
        self.assertNotEqual(cp.returncode, 0)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(want, cp.stderr)


class SlurmSlowRegistry(SlurmCase):
    """The step's pull against a registry behind a fault proxy: it is job time, bounded and
    cancellable, and never the node's problem."""

    PULL_TIMEOUT = 15

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        self.big_behind_proxy(1 << 20)
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["run_dir=" + self.run_dir, "config=" + self.config,
                         "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                         "pull_timeout=%d" % self.PULL_TIMEOUT])

    def pulls(self):
        return step_pulls(self.run_dir)

    def test_trickling_registry_fails_the_step_with_exit_6(self):
        # One byte every 20 s never trips a stall timeout; pull_timeout= ends it.
        self.proxy.add(r"/blobs/", trickle=(1, 20))
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.big, "echo", "ran"],
                               check=False, user="nobody")
        self.assertEqual(cp.returncode, 6, cp.stdout + cp.stderr)
        self.assertNotIn("ran", cp.stdout)
        self.assertIn(on_node("fpull: %s: the pull took longer than pull_timeout=%d seconds "
                              "(exit 6: network or registry failure, worth retrying)" % (
                                  self.big, self.PULL_TIMEOUT)), cp.stderr)
        self.assertEqual(self.pulls(), [])
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(job_dirs(self.run_dir), [])

    def test_scancel_during_the_pull_ends_it(self):
        self.proxy.add(r"/blobs/", trickle=(1024, 0.5))
        p = subprocess.Popen(["runuser", "-u", "nobody", "--", "srun", "-J", "slowpull",
                              "--fpull-image=" + self.big, "echo", "ran"],
                             env=self.cluster.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        # The pull's progress comes live on the step's stderr, a line every few seconds.
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(p.stderr.readline, "")))
        reader.start()
        # (The image as the job's submit pinned it: IMAGE@DIGEST.)
        progress = re.compile(r"^%s(@sha256:[0-9a-f]{64})?: \d+/\d+ layers, .* / .* "
                              r"downloaded, \d+s$" %
                              re.escape(self.big))
        for _ in range(300):
            if any(progress.match(ln) for ln in lines):
                break
            time.sleep(0.1)
        self.assertTrue(any(progress.match(ln) for ln in lines), lines)
        self.assertNotEqual(self.pulls(), [], self.cluster.logs())
        cp = self.cluster._cmd(["squeue", "-h", "-n", "slowpull", "-o", "%i"])
        job = cp.stdout.strip()
        t0 = time.monotonic()
        self.cluster._cmd(["scancel", job])
        out = p.stdout.read()
        p.wait(timeout=60)
        reader.join(timeout=60)
        while self.pulls() and time.monotonic() - t0 < 30:
            time.sleep(0.1)
        print("srun and its pull ended %.1f s after scancel" % (time.monotonic() - t0))
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("ran", out)
        self.assertEqual(self.pulls(), [])
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(job_dirs(self.run_dir), [])
