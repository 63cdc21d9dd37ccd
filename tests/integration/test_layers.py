"""scripts/check-layers: lib/'s wings never include the orchestration (issue 19)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("FPULL_SRC_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(SRC, "scripts", "check-layers")


def run_check(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


class Layers(unittest.TestCase):
    def copy_lib(self):
        tmp = tempfile.mkdtemp(prefix="fpull-layers-")
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copytree(os.path.join(SRC, "lib"), os.path.join(tmp, "lib"))
        return tmp

    def inject(self, root, rel, line):
        with open(os.path.join(root, "lib", rel), "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def test_tree_has_no_upward_include(self):
        r = run_check(SRC)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no upward include", r.stdout)
        # Every wing the build compiles is one the check knows.
        wings = sorted(d for d in os.listdir(os.path.join(SRC, "lib"))
                       if os.path.isdir(os.path.join(SRC, "lib", d)))
        self.assertEqual(wings, ["cache", "detect", "registry", "select", "sig", "sinks", "unpack"])

    def test_wing_including_orchestration_fails(self):
        root = self.copy_lib()
        self.inject(root, "cache/cache.c", '#include "resolve.h"')
        self.inject(root, "select/match.c", '#include "candidates.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/cache/cache.c: wing cache includes the orchestration's resolve.h",
                      r.stderr)
        # An orchestration header the check was never told about is guarded too.
        self.assertIn("lib/select/match.c: wing select includes the orchestration's candidates.h",
                      r.stderr)

    def test_sideways_include_not_below_fails(self):
        root = self.copy_lib()
        self.inject(root, "unpack/dest.c", '#include "sinks/arena.h"')
        self.inject(root, "registry/ref.c", '#include "../cache/cache_lock.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/unpack/dest.c: wing unpack includes sinks/arena.h", r.stderr)
        self.assertIn("lib/registry/ref.c: wing registry includes cache/cache_lock.h", r.stderr)

    def test_ground_floor_including_a_wing_fails(self):
        root = self.copy_lib()
        self.inject(root, "util.h", '#include "select/names.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/util.h: the ground floor includes select/names.h", r.stderr)


if __name__ == "__main__":
    unittest.main()
