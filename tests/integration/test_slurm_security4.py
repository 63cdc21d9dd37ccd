"""Security review 4 of the Slurm plugin (issue 39) on a real Slurm: the site's
shared_cache=DIR is DIR/UID made by root for each user, and a DIR/UID another user made
first, or a DIR others may write, is never written (the step runs with the user's own cache
and says why). The root side's attacks with a FUSE mount of the user's on the job
directory, and a lock any user could hold, are tests/slurmroot/test_slurm_review4.c; the
cache's own refusals are unit.test_cache_owners."""
import os

import fpull
import images
import slurm
from test_slurm import DATA_DIR, PLUGIN, SlurmCase, on_node, os_release, tools_layer

OTHER = 4242  # another user of the node


class SharedCacheOwners(SlurmCase):
    """shared_cache=DIR with DIR as the docs now set it up (root's, 0755), or as they had
    it (1777, each user's pull making DIR/UID)."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        images.push_image(self.client, "hpc/tools", "1.0", [tools_layer(), os_release("tools")])
        self.tools = "%s/hpc/tools:1.0" % self.reg.hostport
        self.site = os.path.join(self.tmp, "site")
        if self._testMethodName == "test_a_site_directory_reached_through_a_symlink_is_refused":
            os.mkdir(os.path.join(self.tmp, "real"))
            os.symlink("real", os.path.join(self.tmp, "link"))
            self.site = os.path.join(self.tmp, "link", "site")
        os.mkdir(self.site)
        open_site = self._testMethodName == "test_a_site_directory_others_may_write_is_refused"
        os.chmod(self.site, 0o1777 if open_site else 0o755)
        self.mine = os.path.join(self.site, str(slurm.NOBODY))
        args = ["run_dir=" + self.run_dir, "config=" + self.config, "data_dir=" + DATA_DIR,
                "fpull=" + fpull.binary(), "shared_cache=" + self.site]
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=args)

    def srun(self):
        return self.cluster._cmd(["srun", "--fpull-image=" + self.tools, "cat", "/etc/kind"],
                                 check=False, user="nobody")

    def test_root_makes_each_users_shared_cache_directory(self):
        cp = self.srun()
        self.assertEqual((cp.returncode, cp.stdout), (0, "tools\n"), cp.stderr)
        st = os.stat(self.mine)
        self.assertEqual((st.st_uid, st.st_mode & 0o7777), (slurm.NOBODY, 0o700))
        self.assertTrue(os.listdir(os.path.join(self.mine, "blobs", "sha256")))
        self.assertNotIn("shared_cache", cp.stderr)

    def test_a_directory_another_user_made_first_is_never_written(self):
        # Review 4, HIGH 2: the squatter made DIR/<victim's uid> (under the old 1777 advice)
        # open to the victim, whose pulls then wrote their blobs there for the squatter to
        # read.
        os.mkdir(self.mine)
        os.chown(self.mine, OTHER, OTHER)
        os.chmod(self.mine, 0o1777)
        cp = self.srun()
        self.assertEqual((cp.returncode, cp.stdout), (0, "tools\n"), cp.stderr)
        self.assertEqual(os.listdir(self.mine), [])
        self.assertIn(on_node("fpull: warning: shared_cache %s: refused: not the job's user's "
                              "directory (uid %d's): this step's pull uses the user's own "
                              "cache" % (self.mine, OTHER)), cp.stderr)

    def test_a_site_directory_others_may_write_is_refused(self):
        # Review 4, HIGH 2: where anyone may make DIR/UID, anyone could make the victim's.
        cp = self.srun()
        self.assertEqual((cp.returncode, cp.stdout), (0, "tools\n"), cp.stderr)
        self.assertFalse(os.path.exists(self.mine))
        self.assertIn("shared_cache %s: refused: it must be root's and writable by root only"
                      % self.site, cp.stderr)

    def test_a_site_directory_reached_through_a_symlink_is_refused(self):
        # Where a user could plant a symlink in the admin's path, root would make their
        # directory wherever it leads.
        cp = self.srun()
        self.assertEqual((cp.returncode, cp.stdout), (0, "tools\n"), cp.stderr)
        self.assertFalse(os.path.exists(self.mine))
        self.assertIn("shared_cache %s: refused: %s is not a directory of root's"
                      % (self.site, os.path.join(self.tmp, "link")), cp.stderr)


class KeptContainersUnderPolicy(SlurmCase):
    """Review 4, LOW 5: a container the user keeps on the node (container_scope=global) ran
    under a reject-everything policy=; now it runs only when the image it was made from
    passes the site's policy again."""

    def setUp(self):
        super().setUp()
        self.require_plugin("runc")
        images.push_image(self.client, "hpc/tools", "1.0", [tools_layer(), os_release("tools")])
        self.tools = "%s/hpc/tools:1.0" % self.reg.hostport
        self.args = ["run_dir=" + self.run_dir, "config=" + self.config,
                     "data_dir=" + DATA_DIR, "fpull=" + fpull.binary(),
                     "container_scope=global"]

    def srun(self, *args):
        return self.cluster._cmd(["srun"] + list(args), check=False, user="nobody")

    def test_a_kept_container_runs_only_if_its_image_passes_the_policy(self):
        self.cluster = self.start_cluster(plugin=PLUGIN, plugin_args=self.args)
        cp = self.srun("--fpull-image=" + self.tools, "--fpull-name=kept", "sh", "-c",
                       "echo mine >/state")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.cluster.stop()
        policy = os.path.join(self.tmp, "reject.json")
        with open(policy, "w") as f:
            f.write('{"default": [{"type": "reject"}]}')
        os.chmod(policy, 0o644)
        self.cluster = self.start_cluster(plugin=PLUGIN,
                                          plugin_args=self.args + ["policy=" + policy])
        cp = self.srun("--fpull-image=" + self.tools, "--fpull-name=kept", "cat", "/state")
        self.assertEqual(cp.returncode, 9, cp.stdout + cp.stderr)
        self.assertNotIn("mine", cp.stdout)
        cp = self.srun("--fpull-name=kept", "cat", "/state")
        self.assertEqual(cp.returncode, 9, cp.stdout + cp.stderr)
        self.assertNotIn("mine", cp.stdout)
        self.assertIn("a kept container runs only with the --fpull-image it was made from",
                      cp.stderr)
