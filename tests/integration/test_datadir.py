"""fpull finds its data files with nothing installed (issue 12 item 3): from the build
tree, from an installed tree moved anywhere, and says what to set when they are missing."""
import os
import shutil
import subprocess
import tempfile
import unittest

import fpull

BUILD = os.environ["FPULL_BUILD_DIR"]
SRC = os.environ["FPULL_SRC_DIR"]
# FPULL_DATA_DIR unset: the lookup itself is under test (the suite sets it otherwise).
NO_DATA_DIR = {"FPULL_DATA_DIR": None}


def run(binary, args, env=None):
    e = fpull.base_env(dict(NO_DATA_DIR, **(env or {})))
    return subprocess.run([binary] + args, env=e, capture_output=True, text=True, timeout=120)


class DataDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-datadir-")
        self.addCleanup(fpull.rmtree, self.tmp)

    def check_works(self, binary):
        cp = run(binary, ["features", "--json", "--platform", "linux/amd64:haswell"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn('"x86-64-v3"', cp.stdout)  # an implication: the tag table was read
        cp = run(binary, ["features", "--json", "--features", "nvidia-396-44"])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn('"cuda-9-2"', cp.stdout)  # the CUDA table beside it too

    def test_build_tree_binary(self):
        binary = fpull.binary()
        self.assertEqual(os.path.realpath(os.path.dirname(binary)), os.path.realpath(BUILD))
        self.check_works(binary)

    def test_installed_tree_moved_elsewhere(self):
        stage = os.path.join(self.tmp, "stage")
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", stage],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(stage, "share", "fpull", "cputags.yaml")))
        moved = os.path.join(self.tmp, "elsewhere", "opt-fpull")
        os.makedirs(os.path.dirname(moved))
        os.rename(stage, moved)
        self.check_works(os.path.join(moved, "bin", "fpull"))

    def test_missing_data_says_what_to_set(self):
        lone = os.path.join(self.tmp, "bin", "fpull")
        os.makedirs(os.path.dirname(lone))
        shutil.copy2(fpull.binary(), lone)
        for args in (["features"], ["inspect", "--offline", "x/y:1"]):
            cp = run(lone, args)
            self.assertEqual(cp.returncode, 1, (args, cp.stderr))
            line = fpull.error_line(cp.stderr)
            self.assertIn("cputags.yaml", line)
            self.assertIn("set FPULL_DATA_DIR", line)
        # A wrong FPULL_DATA_DIR is named as it was given.
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        cp = run(lone, ["features"], env={"FPULL_DATA_DIR": empty})
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertIn(os.path.join(empty, "cputags.yaml"), fpull.error_line(cp.stderr))
        # And with the variable pointing at the sources' data/, the lone binary works.
        cp = run(lone, ["features"], env={"FPULL_DATA_DIR": os.path.join(SRC, "data")})
        self.assertEqual(cp.returncode, 0, cp.stderr)


if __name__ == "__main__":
    unittest.main()
