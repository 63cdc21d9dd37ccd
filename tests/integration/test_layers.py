"""scripts/check-layers: lib/'s folders never include one above them (issues 19, 38)."""
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
        # Every folder the build compiles is one the check knows, and lib/'s top holds no
        # source file (issue 38).
        lib = os.path.join(SRC, "lib")
        wings = sorted(d for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d)))
        self.assertEqual(wings, ["author", "base", "cache", "detect", "pull", "registry",
                                 "select", "sig", "sinks", "unpack"])
        loose = [f for f in os.listdir(lib) if f.endswith((".c", ".h"))]
        self.assertEqual(loose, [])

    def test_wing_including_orchestration_fails(self):
        root = self.copy_lib()
        self.inject(root, "cache/cache.c", '#include "pull/resolve.h"')
        self.inject(root, "select/match.c", '#include "author/../pull/progress.h"')
        # A new orchestration header is guarded without an edit of the check.
        with open(os.path.join(root, "lib", "pull", "new_stage.h"), "w") as f:
            f.write("/* new */\n")
        self.inject(root, "sinks/bundle.c", '#include "pull/new_stage.h"')
        # Authoring stands beside the pull, not on it.
        self.inject(root, "author/push.c", '#include "pull/resolve.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/cache/cache.c: cache includes pull/resolve.h of pull", r.stderr)
        self.assertIn("lib/select/match.c: select includes pull/progress.h of pull", r.stderr)
        self.assertIn("lib/sinks/bundle.c: sinks includes pull/new_stage.h of pull", r.stderr)
        self.assertIn("lib/author/push.c: author includes pull/resolve.h of pull", r.stderr)

    def test_new_folder_or_loose_file_fails(self):
        root = self.copy_lib()
        os.mkdir(os.path.join(root, "lib", "newwing"))
        with open(os.path.join(root, "lib", "loose.c"), "w") as f:
            f.write("int x;\n")
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/newwing/: a folder that scripts/check-layers does not know", r.stderr)
        self.assertIn("lib/loose.c: a source file at lib/'s top", r.stderr)

    def test_sideways_include_not_below_fails(self):
        root = self.copy_lib()
        self.inject(root, "unpack/dest.c", '#include "sinks/arena.h"')
        self.inject(root, "registry/ref.c", '#include "../cache/cache_lock.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/unpack/dest.c: unpack includes sinks/arena.h", r.stderr)
        self.assertIn("lib/registry/ref.c: registry includes cache/cache_lock.h", r.stderr)

    def test_ground_floor_including_a_wing_fails(self):
        root = self.copy_lib()
        self.inject(root, "base/util.h", '#include "select/names.h"')
        self.inject(root, "base/config.c", '#include "../pull/space.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("lib/base/util.h: the ground floor includes select/names.h", r.stderr)
        self.assertIn("lib/base/config.c: the ground floor includes pull/space.h", r.stderr)


if __name__ == "__main__":
    unittest.main()
