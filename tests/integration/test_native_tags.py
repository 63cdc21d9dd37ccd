"""The CPU tags fpull reports on the machine the suite runs on, checked against the machine
(issue 33): each amd64 tag runs code built with `gcc -O3 -march=TAG`, and the machine's
own GCC's -march=native is among them (a VM that hides MWAITX or PTWRITE keeps its tag).
The same check runs on a lent device machine (scripts/device-check)."""
import os
import platform
import subprocess
import sys
import unittest

import fpull

CHECK = os.path.join(fpull.SRC_DIR, "tests", "device", "check_cpu.py")


class NativeTags(unittest.TestCase):
    def test_every_reported_tag_runs_here_and_gccs_native_is_reported(self):
        if platform.machine() != "x86_64":
            self.skipTest("not an x86-64 machine")
        env = dict(os.environ)
        env.pop("FPULL_CPUID_FILE", None)
        data = os.environ.get("FPULL_DATA_DIR", os.path.join(fpull.SRC_DIR, "data"))
        r = subprocess.run([sys.executable, CHECK, fpull.binary(), data],
                           capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ran here:", r.stdout)
