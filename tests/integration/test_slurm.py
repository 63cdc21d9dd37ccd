"""The Slurm SPANK plugin (contrib/slurm) and prolog script on a real Slurm: munged,
slurmctld and slurmd run on this machine (tests/fixtures/slurm.py), jobs are submitted
with sbatch as `nobody`, images come from the real docker-registry."""
import json
import os
import re
import shutil
import stat
import subprocess
import unittest

import cases
import fpull
import images
import slurm

BUILD = os.environ.get("FPULL_BUILD_DIR", os.path.join(fpull.SRC_DIR, "build"))
PLUGIN = os.path.join(BUILD, "contrib", "slurm", "fpull_spank.so")
PROLOG = os.path.join(fpull.SRC_DIR, "contrib", "slurm", "prolog.sh")
DATA_DIR = os.environ.get("FPULL_DATA_DIR", os.path.join(fpull.SRC_DIR, "data"))


# Prints what a container runtime gave it: the bundle's process settings, seen from inside.
SHOW_C = r'''
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char cwd[512];
  printf("uid=%d cwd=%s kind=%s\n", (int)getuid(), getcwd(cwd, sizeof cwd),
         getenv("APP_KIND") ? getenv("APP_KIND") : "-");
  for (int i = 0; i < argc; i++) printf("arg=%s\n", argv[i]);
  return 0;
}
'''


def kind_layer(kind):
    return [{"path": "etc/kind", "data": kind + "\n"},
            {"path": "opt/app/bin/run", "data": "#!/bin/sh\necho %s\n" % kind, "mode": 0o755},
            {"path": "data/blob-" + kind, "data": os.urandom(30000)}]


class SlurmCase(cases.RegistryCase):
    tmp_prefix = "fpull-slurm-test-"

    def setUp(self):
        gone = slurm.missing()
        if gone:
            self.skipTest("Slurm is not installed (missing %s; Debian: slurm-wlm munge)" %
                          ", ".join(gone))
        if os.geteuid() != 0:
            self.fail("needs root: slurmd runs jobs as other users (scripts/test runs as root)")
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

    def start_cluster(self, **kw):
        c = slurm.Cluster(**kw)
        self.addCleanup(c.stop)
        return c.start()

    def blob_gets(self):
        counts = {}
        with open(self.reg.log_path) as f:
            for line in f:
                m = re.search(r'"GET /v2/[^ ]+/blobs/(sha256:[0-9a-f]{64}) HTTP', line)
                if m:
                    counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        return counts


class SlurmPlugin(SlurmCase):
    def setUp(self):
        super().setUp()
        if not os.path.isfile(PLUGIN):
            self.fail("%s was not built (is libslurm-dev installed?)" % PLUGIN)
        self.cluster = self.start_cluster(
            plugin=PLUGIN,
            plugin_args=["cache_dir=" + self.cache, "run_dir=" + self.run_dir,
                         "config=" + self.config, "data_dir=" + DATA_DIR])

    def submit(self, options, script):
        cp, job = self.cluster.sbatch(options, script)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        return job, rec, self.cluster.output(job)

    def test_two_node_kinds_get_their_entries(self):
        script = ('cat "$FPULL_ROOTFS/etc/kind"\n'
                  '"$FPULL_ROOTFS/opt/app/bin/run"\n'
                  'stat -c "owner=%U mode=%a" "$(dirname "$FPULL_ROOTFS")"\n'
                  'echo "rootfs=$FPULL_ROOTFS"\n'
                  'id -un\n')
        seen = {}
        for kind in ("v2", "v3"):
            job, rec, out = self.submit(["--fpull-image=" + self.ref,
                                         "--fpull-features=x86-64-" + kind], script)
            self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
            self.assertEqual(rec["ExitCode"], "0:0", out)
            lines = out.splitlines()
            self.assertEqual(lines[:2], [kind, kind], out)
            # The job-private directory is the job user's and nobody else's.
            self.assertIn("owner=nobody mode=700", out)
            self.assertIn("nobody", lines)
            rootfs = re.search(r"^rootfs=(.*)$", out, re.M).group(1)
            self.assertEqual(rootfs, os.path.join(self.run_dir, job, "rootfs"))
            # The epilog removed it.
            self.assertFalse(os.path.lexists(os.path.dirname(rootfs)), rootfs)
            # The user part unpacked exactly the entry the prolog chose, by digest.
            img = self.v2 if kind == "v2" else self.v3
            self.assertIn("fpull: job %s: unpacking %s@%s into %s" % (
                job, self.ref, img["digest"], rootfs), self.cluster.log("slurmd.log"))
            seen[kind] = job
        # The prolog filled the node's cache with each kind's own entry, readable by users.
        blobs = os.path.join(self.cache, "blobs", "sha256")
        for img in (self.v2, self.v3):
            for d in [img["digest"], img["config_digest"]] + [l["digest"] for l in img["layers"]]:
                st = os.stat(os.path.join(blobs, d.split(":")[1]))
                self.assertEqual(stat.S_IMODE(st.st_mode) & 0o044, 0o044, d)
        self.assertEqual(stat.S_IMODE(os.stat(self.cache).st_mode), 0o755)
        # Each blob crossed the network once: the user part read the cache only.
        gets = self.blob_gets()
        for img in (self.v2, self.v3):
            for l in img["layers"]:
                self.assertEqual(gets.get(l["digest"]), 1, gets)
        self.assertEqual(self.cluster.settled_node_state(), "idle")

    def test_detected_features_choose_the_nodes_entry(self):
        # Without --fpull-features, the node's own CPU decides, as `fpull inspect` says.
        cp, doc = fpull.run_json(["inspect", self.ref], env={"FPULL_FEATURES": None})
        want = "v3" if doc["chosen"] == self.v3["digest"] else "v2"
        job, rec, out = self.submit(["--fpull-image=" + self.ref],
                                    'cat "$FPULL_ROOTFS/etc/kind"\n')
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(out.strip(), want)

    def test_steps_share_the_jobs_rootfs(self):
        job, rec, out = self.submit(
            ["--fpull-image=" + self.ref, "--fpull-features=x86-64-v2"],
            'srun sh -c \'cat "$FPULL_ROOTFS/etc/kind"; echo "step=$FPULL_ROOTFS"\'\n'
            'echo "batch=$FPULL_ROOTFS"\n')
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertIn("v2\n", out)
        step = re.search(r"^step=(.*)$", out, re.M).group(1)
        batch = re.search(r"^batch=(.*)$", out, re.M).group(1)
        self.assertEqual(step, batch)

    def test_srun_job(self):
        # An interactive job: allocation, prolog, one step, epilog, all from srun.
        cp = self.cluster._cmd(["srun", "--fpull-image=" + self.ref, "--fpull-features=x86-64-v3",
                                "sh", "-c", 'cat "$FPULL_ROOTFS/etc/kind"'],
                               check=False, user="nobody")
        self.assertEqual((cp.returncode, cp.stdout), (0, "v3\n"), cp.stderr)
        bad = "%s/hpc/app:nope" % self.reg.hostport
        cp = self.cluster._cmd(["srun", "--fpull-image=" + bad, "echo", "ran"], check=False,
                               user="nobody")
        self.assertEqual(cp.returncode, 5, cp.stdout + cp.stderr)
        self.assertNotIn("ran", cp.stdout)
        self.assertRegex(cp.stderr, r"(?m)^fpull: .*nope.*\(exit 5: image not found\)$")
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_bad_image_fails_the_job_not_the_node(self):
        bad = "%s/hpc/app:nope" % self.reg.hostport
        job, rec, out = self.submit(["--fpull-image=" + bad], "echo job-body-ran\n")
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertEqual(rec["ExitCode"], "5:0", out)
        self.assertNotIn("job-body-ran", out)
        # One line, fpull's, naming the image, with the exit code's meaning.
        lines = [ln for ln in out.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, out)
        self.assertTrue(lines[0].startswith("fpull: "), out)
        self.assertIn(bad, lines[0])
        self.assertTrue(lines[0].endswith("(exit 5: image not found)"), out)
        # The node is not drained, and the next job runs on it.
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        job, rec, out = self.submit(["--fpull-image=" + self.ref, "--fpull-features=x86-64-v3"],
                                    'cat "$FPULL_ROOTFS/etc/kind"\n')
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(out.strip(), "v3")
        # Nothing of the failed job is left in run_dir.
        self.assertEqual(sorted(os.listdir(self.run_dir)), [])

    def test_bundle_job_runs_with_runc(self):
        # The bundle runs as built: rootless runc, as the job's user, inside the job.
        for tool in ("runc", "gcc"):
            if not shutil.which(tool):
                self.skipTest("%s is not installed (Debian: runc, gcc)" % tool)
        src = os.path.join(self.tmp, "show.c")
        exe = os.path.join(self.tmp, "show")
        with open(src, "w") as f:
            f.write(SHOW_C)
        subprocess.run(["gcc", "-static", "-O1", "-o", exe, src], check=True)
        with open(exe, "rb") as f:
            show = f.read()
        images.push_image(self.client, "hpc/show", "1.0",
                          [[{"path": "work", "type": "dir", "mode": 0o755},
                            {"path": "show", "data": show, "mode": 0o755}]],
                          config_extra={"config": {"Entrypoint": ["/show", "from-entrypoint"],
                                                   "Cmd": ["from-cmd"],
                                                   "Env": ["APP_KIND=bundled"],
                                                   "WorkingDir": "/work"}})
        ref = "%s/hpc/show:1.0" % self.reg.hostport
        job, rec, out = self.submit(
            ["--fpull-image=" + ref, "--fpull-format=bundle"],
            'd=$(dirname "$FPULL_BUNDLE")\n'
            'XDG_RUNTIME_DIR="$d" runc --root "$d/runc" run --bundle "$FPULL_BUNDLE" '
            '"fpull-$SLURM_JOB_ID" </dev/null 2>&1\n'
            'echo "runc-exit=$?"\n')
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(out.splitlines(), [
            "uid=0 cwd=/work kind=bundled", "arg=/show", "arg=from-entrypoint", "arg=from-cmd",
            "runc-exit=0"], out)
        self.assertFalse(os.path.lexists(os.path.join(self.run_dir, job)))
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_bundle_that_cannot_be_built_fails_the_job_not_the_node(self):
        # The image's User is in no /etc/passwd of its rootfs: no config.json can say who
        # runs the process, and the job must not run with a bundle that lacks it.
        images.push_image(self.client, "hpc/nouser", "1.0", [kind_layer("v2")],
                          config_extra={"config": {"Cmd": ["/opt/app/bin/run"],
                                                   "User": "appuser"}})
        ref = "%s/hpc/nouser:1.0" % self.reg.hostport
        job, rec, out = self.submit(["--fpull-image=" + ref, "--fpull-format=bundle"],
                                    "echo job-body-ran\n")
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertEqual(rec["ExitCode"], "1:0", out)
        self.assertRegex(out, r'^fpull: [^\n]*User "appuser": no user appuser in the '
                              r"rootfs's /etc/passwd \(exit 1: failure\)\n$")
        # Nothing half-built is left, and the node takes the next job.
        self.assertEqual(os.listdir(self.run_dir), [])
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_entry_for_no_node_fails_the_job_with_exit_3(self):
        # An arm64-only target fits neither entry.
        job, rec, out = self.submit(["--fpull-image=" + self.ref,
                                     "--fpull-features=neoverse-n1"], "echo ran\n")
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertEqual(rec["ExitCode"], "3:0", out)
        self.assertRegex(out, r"^fpull: [^\n]*\(exit 3: no entry of the image fits this node\)\n$")
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_feature_typo_never_runs_the_job(self):
        # A misspelt feature never selects another entry: the job fails before its body.
        # (Exit 2 naming the name once libfpull validates given names, contract v3; until
        # then 3, as no entry has the misspelt feature.)
        job, rec, out = self.submit(["--fpull-image=" + self.ref,
                                     "--fpull-features=x86-64-v33"], "echo ran\n")
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertIn(rec["ExitCode"], ("2:0", "3:0"), out)
        self.assertRegex(out, r"^fpull: [^\n]*\(exit [23]: [^\n]*\)\n$")
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_epilog_removes_only_the_jobs_own_files(self):
        # A root-owned directory the job's user can read but not change.
        victim = os.path.join(self.tmp, "victim")
        os.mkdir(victim, 0o755)
        with open(os.path.join(victim, "keep"), "w") as f:
            f.write("root's\n")
        # The user leaves a symlink to it, and a read-only tree, in the job directory.
        job, rec, out = self.submit(
            ["--fpull-image=" + self.ref, "--fpull-features=x86-64-v2"],
            'd=$(dirname "$FPULL_ROOTFS")\n'
            'ln -s %s "$d/link"\n'
            'mkdir -p "$d/ro/sub" && touch "$d/ro/sub/f" && chmod 500 "$d/ro/sub" "$d/ro"\n'
            'chmod 500 "$FPULL_ROOTFS/etc"\n'
            'echo done\n' % victim)
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(out.strip(), "done")
        self.assertFalse(os.path.lexists(os.path.join(self.run_dir, job)))
        self.assertEqual(os.listdir(victim), ["keep"])

    def test_run_dir_others_can_write_fails_the_job(self):
        # Someone who can write run_dir could plant a job's error record or directory.
        os.mkdir(self.run_dir)
        os.chmod(self.run_dir, 0o1777)
        job, rec, out = self.submit(["--fpull-image=" + self.ref], "echo ran\n")
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertRegex(out, r"^fpull: .*%s.*must be owned by root and writable by root "
                              r"only.*\(exit 1: failure\)\n$" % re.escape(self.run_dir))
        self.assertEqual(os.listdir(self.run_dir), [])
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())

    def test_typo_in_image_is_refused_at_submit(self):
        cp, job = self.cluster.sbatch(["--fpull-image=%s/HPC/app:1.0" % self.reg.hostport],
                                      "echo ran\n")
        self.assertNotEqual(cp.returncode, 0)
        self.assertIsNone(job)
        self.assertIn("fpull: --fpull-image", cp.stderr)

    def test_unknown_format_is_refused_at_submit(self):
        # A typo never gives the job the other format.
        cp, job = self.cluster.sbatch(["--fpull-image=" + self.ref, "--fpull-format=bundel"],
                                      "echo ran\n")
        self.assertNotEqual(cp.returncode, 0)
        self.assertIsNone(job)
        self.assertIn("fpull: --fpull-format=bundel: unknown format (did you mean 'bundle'?)",
                      cp.stderr)
        # fpull pull's squashfs would need the job to mount it: not offered, and not a typo.
        cp, job = self.cluster.sbatch(["--fpull-image=" + self.ref, "--fpull-format=squashfs"],
                                      "echo ran\n")
        self.assertNotEqual(cp.returncode, 0)
        self.assertIsNone(job)
        self.assertIn("fpull: --fpull-format=squashfs: unknown format (dir or bundle)", cp.stderr)
        self.assertNotIn("did you mean", cp.stderr)

    def test_bundle_job_gets_config_json_and_rootfs(self):
        # Each entry with its own runtime settings: config.json must be the chosen entry's.
        entries = []
        for kind in ("v2", "v3"):
            img = images.push_image(self.client, "hpc/tool", None, [kind_layer(kind)],
                                    config_extra={"config": {
                                        "Entrypoint": ["/opt/app/bin/run"],
                                        "Cmd": ["--mode", kind],
                                        "Env": ["PATH=/opt/app/bin:/usr/bin:/bin",
                                                "APP_KIND=" + kind],
                                        "WorkingDir": "/opt/app"}})
            entries.append((img, {"os": "linux", "architecture": "amd64",
                                  "features": ["x86-64-" + kind]}))
        images.push_index(self.client, "hpc/tool", "2.0", entries)
        ref = "%s/hpc/tool:2.0" % self.reg.hostport
        job, rec, out = self.submit(
            ["--fpull-image=" + ref, "--fpull-features=x86-64-v3", "--fpull-format=bundle"],
            'echo "bundle=$FPULL_BUNDLE"\n'
            'echo "rootfs=$FPULL_ROOTFS"\n'
            'cat "$FPULL_BUNDLE/rootfs/etc/kind"\n'
            # A later step of the job finds the same, complete bundle.
            'srun sh -c \'echo "step=$FPULL_BUNDLE"; '
            'test -s "$FPULL_BUNDLE/config.json" && echo step-has-config\'\n'
            'echo "--- config.json"\n'
            'cat "$FPULL_BUNDLE/config.json"\n')
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        head, _, spec_text = out.partition("--- config.json\n")
        bundle = re.search(r"^bundle=(.*)$", head, re.M).group(1)
        self.assertEqual(bundle, os.path.join(self.run_dir, job, "bundle"))
        self.assertIn("rootfs=%s/rootfs\n" % bundle, head)
        self.assertIn("\nv3\n", head)
        self.assertIn("step=%s\nstep-has-config\n" % bundle, head)
        spec = json.loads(spec_text)
        self.assertEqual(spec["root"]["path"], "rootfs")
        self.assertEqual(spec["process"]["args"], ["/opt/app/bin/run", "--mode", "v3"])
        self.assertIn("APP_KIND=v3", spec["process"]["env"])
        self.assertIn("PATH=/opt/app/bin:/usr/bin:/bin", spec["process"]["env"])
        self.assertEqual(spec["process"]["cwd"], "/opt/app")
        # Pulled as the job's user: a rootless bundle mapping nobody.
        self.assertEqual([m["hostID"] for m in spec["linux"]["uidMappings"]], [slurm.NOBODY])
        # The user part unpacked the entry the prolog chose, from the cache only.
        self.assertIn("fpull: job %s: unpacking %s@%s into %s" % (
            job, ref, entries[1][0]["digest"], bundle), self.cluster.log("slurmd.log"))
        for l in entries[1][0]["layers"]:
            self.assertEqual(self.blob_gets().get(l["digest"]), 1)
        # The epilog removed it all.
        self.assertFalse(os.path.lexists(os.path.join(self.run_dir, job)))
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())


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
                    "FPULL_CONFIG=%s FPULL_PROLOG_LOG=%s exec %s\n" % (
                        fpull.binary(), self.cache, DATA_DIR, self.config, self.prolog_log,
                        PROLOG))
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
