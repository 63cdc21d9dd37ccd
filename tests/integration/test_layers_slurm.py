"""scripts/check-layers on contrib/slurm: no include across the line between the sides that
run the code (root, task, runner, holder; common/ is shared), and no cycle between the
runner's files (issue 38)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("FPULL_SRC_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(SRC, "scripts", "check-layers")
SIDES = ["common", "holder", "root", "runner", "task"]


def run_check(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


class SlurmLayers(unittest.TestCase):
    def copy_tree(self):
        """lib/ (the runner and the plugin include its headers) and contrib/slurm/."""
        tmp = tempfile.mkdtemp(prefix="fpull-layers-slurm-")
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copytree(os.path.join(SRC, "lib"), os.path.join(tmp, "lib"))
        shutil.copytree(os.path.join(SRC, "contrib", "slurm"),
                        os.path.join(tmp, "contrib", "slurm"))
        return tmp

    def inject(self, root, rel, line):
        with open(os.path.join(root, "contrib", "slurm", rel), "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def test_tree_has_no_include_across_sides(self):
        r = run_check(SRC)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no include across its sides, no cycle in runner/", r.stdout)
        top = os.path.join(SRC, "contrib", "slurm")
        self.assertEqual(sorted(d for d in os.listdir(top)
                                if os.path.isdir(os.path.join(top, d))), SIDES)
        # No code is left beside the folders.
        self.assertEqual([f for f in os.listdir(top) if f.endswith((".c", ".h"))], [])

    def test_root_including_runner_fails(self):
        root = self.copy_tree()
        self.inject(root, "root/job_dir.c", '#include "runner/sqsh_mount.h"')
        # Through a relative path too: the header is where the compiler finds it.
        self.inject(root, "root/spank_fpull.c", '#include "../runner/stage.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("contrib/slurm/root/job_dir.c: root/ includes runner/sqsh_mount.h of "
                      "runner/", r.stderr)
        self.assertIn("contrib/slurm/root/spank_fpull.c: root/ includes runner/stage.h of "
                      "runner/", r.stderr)

    def test_runner_including_plugin_fails(self):
        root = self.copy_tree()
        self.inject(root, "runner/runner.c", '#include "root/job_dir.h"')
        self.inject(root, "runner/store.c", '#include "task/container.h"')
        self.inject(root, "holder/hold.c", '#include "common/run.h"')
        self.inject(root, "common/run.h", '#include "task/container.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("contrib/slurm/runner/runner.c: runner/ includes root/job_dir.h of root/",
                      r.stderr)
        self.assertIn("contrib/slurm/runner/store.c: runner/ includes task/container.h of task/",
                      r.stderr)
        self.assertIn("contrib/slurm/holder/hold.c: holder/ includes common/run.h", r.stderr)
        self.assertIn("contrib/slurm/common/run.h: common/ includes task/container.h", r.stderr)

    def test_runner_stage_calling_back_up_fails(self):
        root = self.copy_tree()
        # runner_pull.c is below runner_image.c, which includes runner_pull.h.
        self.inject(root, "runner/runner_pull.c", '#include "runner_image.h"')
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("contrib/slurm/runner/: include cycle runner_image -> runner_pull -> "
                      "runner_image", r.stderr)

    def test_runner_header_declaring_another_files_function_fails(self):
        # One header for every file's functions (runner.h was) hides a circle between
        # their .c files from the include graph.
        root = self.copy_tree()
        self.inject(root, "runner/stage.h", "int fp_runner_pull(struct runner *rn, cJSON **r);")
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("contrib/slurm/runner/stage.h: declares fp_runner_pull, which stage.c "
                      "does not define", r.stderr)

    def test_code_beside_the_folders_fails(self):
        root = self.copy_tree()
        open(os.path.join(root, "contrib", "slurm", "loose.c"), "w").close()
        r = run_check(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("contrib/slurm/loose.c: not in a folder of a side", r.stderr)


if __name__ == "__main__":
    unittest.main()
