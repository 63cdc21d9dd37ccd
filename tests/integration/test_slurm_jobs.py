"""What a job sees inside the image, as HPC workloads need it (issue 30): the user's name,
groups and home; the job's values for the variables it names (--fpull-env) and its TERM;
one line per step, or none with --fpull-quiet; steps on the host with --fpull-image=none;
pyxis's mount flags, sources checked at submit; the site's defaults for remap-root and
the Entrypoint."""
import os
import shutil
import subprocess

import fpull
import images
import slurm
from test_slurm import DATA_DIR, PLUGIN, SlurmCase, job_dirs, os_release, tools_layer

TOOLS = ("/bin/sh", "/usr/bin/cat", "/usr/bin/id", "/usr/bin/env", "/usr/bin/grep",
         "/usr/bin/pwd", "/usr/bin/touch", "/usr/bin/whoami", "/usr/bin/true")


def fpull_lines(stderr):
    """The step's stderr without srun's own lines ("job N queued and waiting...")."""
    return [ln for ln in stderr.splitlines() if not ln.startswith("srun: ")]


class SlurmJobs(SlurmCase):

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        img = images.push_image(
            self.client, "hpc/job", "1.0",
            [tools_layer(TOOLS), os_release("image-job"),
             [{"path": "etc/passwd", "data": "root:x:0:0:root:/root:/bin/sh\n"
                                             "app:x:65534:65534:the image's:/app:/bin/sh\n"},
              {"path": "etc/group", "data": "root:x:0:\n"},
              {"path": "usr/local/bin/entry", "mode": 0o755,
               "data": '#!/bin/sh\necho "entry $*"\nexec "$@"\n'}]],
            config_extra={"config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin",
                                             "HOME=/root", "TERM=xterm",
                                             "OMP_NUM_THREADS=8"],
                                     "Entrypoint": ["/usr/local/bin/entry"]}})
        self.digest = img["digest"]
        self.ref = "%s/hpc/job:1.0" % self.reg.hostport
        args = ["run_dir=" + self.run_dir, "config=" + self.config, "data_dir=" + DATA_DIR,
                "fpull=" + fpull.binary()]
        if self._testMethodName == "test_site_defaults_for_remap_root_and_the_entrypoint":
            args += ["remap_root=yes", "execute_entrypoint=yes"]
        if self._testMethodName == "test_named_container_of_global_scope_outlives_the_job":
            args += ["container_scope=global"]
        if self._testMethodName == "test_global_names_count_towards_store_max":
            args += ["container_scope=global", "store_max=1M"]
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=args)
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home, 0o700)
        shutil.chown(self.home, "nobody", None)

    def srun(self, args, env=None):
        argv = ["env"] + ["%s=%s" % kv for kv in (env or {}).items()] + ["srun"] + list(args)
        return self.cluster._cmd(argv, check=False, user="nobody")

    def test_the_user_has_a_name_groups_and_a_home(self):
        cp = self.srun(["--fpull-image=" + self.ref, "sh", "-c",
                        'whoami; id -un; id -gn; echo "$HOME"; grep -c "^app:" /etc/passwd; '
                        'grep "^root:" /etc/passwd'],
                       env={"HOME": self.home})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        # The host's name for uid 65534 (nobody) replaces the image's line of that uid; the
        # image's other users stay.
        self.assertEqual(cp.stdout.splitlines(),
                         ["nobody", "nobody", "nogroup", self.home, "0",
                          "root:x:0:0:root:/root:/bin/sh"], cp.stderr)
        # Only this step sees it: the image's own file is not changed.
        cp = self.srun(["--fpull-image=" + self.ref, "--no-fpull-mount-home", "sh", "-c",
                        'grep "^nobody:" /etc/passwd; echo "$HOME"'], env={"HOME": self.home})
        self.assertEqual(cp.returncode, 0, cp.stderr)
        # Without the home mounted, HOME is the image's (the job's is not there).
        self.assertEqual(cp.stdout.splitlines()[-1], "/root", cp.stdout)

    def test_job_values_win_for_names_it_lists(self):
        env = {"HOME": self.home, "OMP_NUM_THREADS": "2", "TERM": "vt100"}
        cp = self.srun(["--fpull-image=" + self.ref, "sh", "-c", 'echo "$OMP_NUM_THREADS $TERM"'],
                       env=env)
        self.assertEqual((cp.returncode, cp.stdout), (0, "8 vt100\n"), cp.stderr)
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-env=OMP_NUM_THREADS", "sh", "-c",
                        'echo "$OMP_NUM_THREADS $TERM"'], env=env)
        self.assertEqual((cp.returncode, cp.stdout), (0, "2 vt100\n"), cp.stderr)
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-env=OMP-NUM", "true"], env=env)
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("--fpull-env=OMP-NUM: 'OMP-NUM' is not a variable's name", cp.stderr)

    def test_one_line_per_step_or_none_when_quiet(self):
        cp = self.srun(["--fpull-image=" + self.ref, "true"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        lines = fpull_lines(cp.stderr)
        self.assertEqual(len(lines), 1, cp.stderr)
        self.assertIn(self.digest, lines[0])
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-quiet", "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout, fpull_lines(cp.stderr)),
                         (0, "image-job\n", []))
        # Errors still say why.
        cp = self.srun(["--fpull-image=%s/hpc/job:nope" % self.reg.hostport, "--fpull-quiet",
                        "true"])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("not found", cp.stderr)

    def test_none_runs_a_step_on_the_host(self):
        with open("/etc/os-release") as f:
            host = f.read()
        cp = self.srun(["--fpull-image=none", "cat", "/etc/os-release"])
        self.assertEqual((cp.returncode, cp.stdout), (0, host), cp.stderr)
        self.assertEqual(fpull_lines(cp.stderr), [])
        # A step of a batch script in an image going back to the node:
        # test_slurm.test_batch_steps_inherit_the_image_or_name_another_or_none.

    def submit_script(self, options, script):
        cp, job = self.cluster.sbatch(options, script, user="nobody")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        return job, rec, self.cluster.output(job)

    def test_mount_flags_as_pyxis_writes_them(self):
        data = os.path.join(self.tmp, "data")
        os.mkdir(data, 0o777)
        cp = self.srun(["--fpull-image=" + self.ref,
                        "--fpull-mounts=%s:/data:ro+rprivate" % data, "sh", "-c",
                        "touch /data/x 2>/dev/null && echo rw || echo ro; "
                        "grep -c ' /data ' /proc/self/mountinfo"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "ro\n1\n"), cp.stderr)
        # A flag fpull does not know is refused at submit, with what was meant.
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-mounts=%s:/data:ro+rprivat" % data,
                        "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("unknown flag 'rprivat' (did you mean 'rprivate'?)", cp.stderr)
        # A source that does not exist is refused at submit, not by the runtime on a node.
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-mounts=/nonexistent/d:/data",
                        "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("--fpull-mounts: /nonexistent/d: No such file or directory", cp.stderr)
        self.assertNotIn("runc", cp.stderr)
        # A tmpfs of the step's own, with pyxis's options; a misspelt one is refused.
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-mounts=tmpfs:/scratch:size=1M",
                        "sh", "-c", "grep ' /scratch ' /proc/self/mounts"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertRegex(cp.stdout, r"^tmpfs /scratch tmpfs \S*nosuid,nodev\S*size=1024k")
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-mounts=tmpfs:/scratch:sise=1M",
                        "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("unknown tmpfs option 'sise=1M' (did you mean 'size'?)", cp.stderr)

    def test_chown_and_setuid_succeed_without_effect(self):
        # The seccomp filter pyxis and enroot give tasks, so that a package manager runs as
        # the remapped root: chown to the package's owner "succeeds", the file stays the
        # user's on the node, and a non-remapped task gets the same filter.
        images.push_image(self.client, "hpc/pkg", "1.0",
                          [tools_layer(TOOLS + ("/usr/bin/chown", "/usr/bin/stat")),
                           os_release("pkg")])
        ref = "%s/hpc/pkg:1.0" % self.reg.hostport
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        script = ("touch /shared/f && chown 123:456 /shared/f && echo chowned; "
                  "stat -c %u /shared/f; grep '^Seccomp:' /proc/self/status")
        for remap, inside in (("--fpull-remap-root", "0"),
                              ("--no-fpull-remap-root", str(slurm.NOBODY))):
            cp = self.srun(["--fpull-image=" + ref, remap, "--fpull-mounts=%s:/shared" % shared,
                            "sh", "-c", script])
            self.assertEqual(cp.returncode, 0, cp.stderr)
            self.assertEqual(cp.stdout.split(), ["chowned", inside, "Seccomp:", "2"], remap)
            st = os.stat(os.path.join(shared, "f"))
            self.assertEqual((st.st_uid, st.st_gid), (slurm.NOBODY, slurm.NOBODY), remap)
            os.unlink(os.path.join(shared, "f"))

    def test_site_defaults_for_remap_root_and_the_entrypoint(self):
        # remap_root=yes, execute_entrypoint=yes: the defaults; the job's options win.
        cp = self.srun(["--fpull-image=" + self.ref, "id", "-u"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "entry id -u\n0\n"), cp.stderr)
        cp = self.srun(["--fpull-image=" + self.ref, "--no-fpull-remap-root",
                        "--no-fpull-entrypoint", "id", "-u"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "%d\n" % slurm.NOBODY), cp.stderr)

    def test_named_container_keeps_its_state_for_the_jobs_later_steps(self):
        script = ("#!/bin/sh\nI=--fpull-image=%s\n"
                  "srun $I --fpull-name=dev sh -c 'echo installed >/state'\n"
                  "srun $I --fpull-name=dev cat /state\n"
                  "srun $I sh -c 'cat /state 2>/dev/null || echo unnamed-is-fresh'\n" % self.ref)
        job, rec, out = self.submit_script([], script)
        self.assertEqual(rec["JobState"], "COMPLETED", out)
        self.assertIn("installed\n", out)
        self.assertIn("unnamed-is-fresh\n", out)
        self.assertRegex(out, r"fpull: [^ ]+: container dev \(%s\) as the job's earlier steps "
                              r"left it" % self.digest)
        # Each blob was fetched once (the second step pulled nothing, the third read the cache).
        self.assertEqual(set(self.blob_gets().values()), {1})
        # The next job's "dev" is a new container (container_scope=job, the default).
        job, rec, out = self.submit_script(
            [], "#!/bin/sh\nsrun --fpull-image=%s --fpull-name=dev "
                "sh -c 'cat /state 2>/dev/null || echo fresh'\n" % self.ref)
        self.assertEqual(rec["JobState"], "COMPLETED", out)
        self.assertIn("fresh\n", out)
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        self.assertEqual(job_dirs(self.run_dir), [])
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-name=../x", "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("--fpull-name=../x: not a name", cp.stderr)

    def test_named_container_of_global_scope_outlives_the_job(self):
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-name=keep", "sh", "-c",
                        "echo kept >/state"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        cp = self.srun(["--fpull-image=" + self.ref, "--fpull-name=keep", "cat", "/state"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "kept\n"), cp.stderr)
        names = os.path.join(self.run_dir, "store", str(slurm.NOBODY), "names")
        self.assertEqual(sorted(os.listdir(names)), ["keep", "keep.lock"])
        st = os.stat(os.path.join(names, "keep"))
        self.assertEqual(st.st_uid, slurm.NOBODY)

    def test_global_names_count_towards_store_max(self):
        # Review 4 (issue 39, LOW 6): names kept across jobs were outside store_max= (66 MB
        # stayed after a job with store_max=1M, for good): they count, the least recently
        # used go first, never the step's own.
        for name in ("old", "new"):
            cp = self.srun(["--fpull-image=" + self.ref, "--fpull-name=" + name, "true"])
            self.assertEqual(cp.returncode, 0, cp.stderr)
        names = os.path.join(self.run_dir, "store", str(slurm.NOBODY), "names")
        self.assertEqual(sorted(os.listdir(names)), ["new", "new.lock"])

    def test_registry_hash_image_as_pyxis_users_write_it(self):
        # enroot's REGISTRY#IMAGE, what pyxis users paste, is the registry's image.
        ref = "%s#hpc/job:1.0" % self.reg.hostport
        cp = self.srun(["--fpull-image=" + ref, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "image-job\n"), cp.stderr)
        self.assertIn(self.digest, cp.stderr)
        cp = self.srun(["--fpull-image=%s#hpc#job" % self.reg.hostport, "true"])
        self.assertNotEqual(cp.returncode, 0)
        self.assertIn("'#' separates a registry from its image", cp.stderr)

