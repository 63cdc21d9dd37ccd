"""The plugin with `runtime=crun` in plugstack.conf: the same jobs as test_slurm's runc
ones, on the real Slurm of the fixture, with crun (Debian: crun) building the rootless
container that the tasks join."""
import os
import shutil

import test_slurm

UNIFIED = "/sys/fs/cgroup/unified"


def hybrid_with_v2_controllers():
    """crun 1.8 refuses to start on a hybrid cgroup hierarchy whose v2 part has controllers
    ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2"), even with
    --cgroup-manager=disabled. Stock Debian 12 boots pure v2; the test VMs boot hybrid with
    hugetlb on v2."""
    try:
        with open(os.path.join(UNIFIED, "cgroup.controllers")) as f:
            return bool(f.read().split())
    except OSError:
        return False


class SlurmPluginCrun(test_slurm.SlurmPlugin):
    def setUp(self):
        if not shutil.which("crun"):
            self.skipTest("crun is not installed (Debian: crun)")
        super().setUp()

    def start_cluster(self, **kw):
        if hybrid_with_v2_controllers():
            # Only this slurmd's mount namespace (and so its jobs') is changed: the unified
            # hierarchy is hidden under a tmpfs, and crun sees the v1 hierarchy it can work
            # beside. The plugin keeps the tasks in the job's cgroup either way.
            kw["slurmd_prefix"] = test_slurm.own_namespace_prefix(
                "mount -t tmpfs -o ro,nosuid,nodev,noexec none " + UNIFIED)
        return super().start_cluster(**kw)

    def plugin_args(self):
        if self._testMethodName == "test_crun_builds_the_container":
            return super().plugin_args() + ["runtime=" + self.logging_crun()]
        return super().plugin_args() + ["runtime=crun"]

    def logging_crun(self):
        """A runtime=/abs/path/crun that writes down how it was called, then is crun."""
        d = os.path.join(self.tmp, "wrap")
        os.mkdir(d, 0o755)
        self.calls = os.path.join(d, "calls")
        with open(self.calls, "w"):
            pass
        os.chmod(self.calls, 0o666)
        wrapper = os.path.join(d, "crun")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\necho "$*" >>%s\nexec %s "$@"\n' % (self.calls,
                                                                 shutil.which("crun")))
        os.chmod(wrapper, 0o755)
        return wrapper

    def test_crun_builds_the_container(self):
        cp = self.srun(["--fpull-image=" + self.other_ref, "cat", "/etc/kind"])
        self.assertEqual((cp.returncode, cp.stdout), (0, "other\n"), cp.stderr)
        # Nothing of the container is left once the node has settled (no runtime state, no
        # process holding the step's directory)...
        self.assert_clean()
        with open(self.calls) as f:
            calls = f.read().splitlines()
        verbs = [c.split()[3] for c in calls]
        # ...though `delete` may not have run: the runner deletes the container once every
        # task has joined it, and a task as short as this one can end the step first, whose
        # end kills the runner's process group (the container's init with it) and removes
        # the runtime's state with the step's directory.
        # The container's process is the holder (fpull-slurm-hold, the runner's descriptor
        # 3), started: the tasks join its namespaces as the user.
        self.assertEqual(verbs[:2], ["create", "start"], calls)
        self.assertIn("--preserve-fds=2", calls[0].split())
        self.assertIn(verbs[2:], ([], ["delete"]), calls)
        # Told to make no cgroup (the tasks stay in the job's), with the step's own state.
        self.assertTrue(all(c.startswith("--cgroup-manager=disabled --root ") for c in calls),
                        calls)

    def test_task_runs_in_the_image(self):
        super().test_task_runs_in_the_image()

    def test_remap_root(self):
        super().test_remap_root()

    def test_bind_mount_is_writable_and_lands_on_the_host_as_the_user(self):
        super().test_bind_mount_is_writable_and_lands_on_the_host_as_the_user()

    def test_four_tasks_share_one_container(self):
        super().test_four_tasks_share_one_container()

    def test_scancel_ends_the_task_inside(self):
        super().test_scancel_ends_the_task_inside()

    def test_symlink_workdir_and_mount_stay_inside(self):
        super().test_symlink_workdir_and_mount_stay_inside()

    def test_failed_task_leaves_no_container_behind(self):
        super().test_failed_task_leaves_no_container_behind()

    def test_epilog_leaves_nothing_behind(self):
        super().test_epilog_leaves_nothing_behind()
