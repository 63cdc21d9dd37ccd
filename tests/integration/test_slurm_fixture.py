"""The one-node Slurm fixture leaves nothing behind: a step still running when the cluster
stops has its slurmstepd ended too (they run in a session of their own, which the daemons'
process groups do not reach, and outlived the suite by hours)."""
import os
import subprocess
import time
import unittest

import slurm


class FixtureCleanup(unittest.TestCase):

    def setUp(self):
        slurm.require(self)

    def test_a_running_steps_slurmstepd_ends_with_the_cluster(self):
        c = slurm.Cluster().start()
        conf, srun = c.conf, None
        try:
            srun = subprocess.Popen(["srun", "sleep", "300"], env=dict(os.environ,
                                    SLURM_CONF=conf), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            deadline = time.monotonic() + 60
            while not slurm._stepds_of(conf) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertTrue(slurm._stepds_of(conf), "the step never started")
        finally:
            c.stop()
            if srun:
                srun.kill()
                srun.wait()
        self.assertEqual(slurm._stepds_of(conf), [])


if __name__ == "__main__":
    unittest.main()
