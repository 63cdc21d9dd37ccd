"""The CLI and its documentation agree: every option of every command is in the man
page, the man page renders without warnings, and usage errors exit 2."""
import glob
import os
import re
import subprocess
import unittest

import fpull

SRC = os.environ["FPULL_SRC_DIR"]
MAN = os.path.join(SRC, "man", "fpull.1")
COMMANDS = ["pull", "prefetch", "inspect", "features", "login", "logout", "version", "config",
            "cache", "serve"]


def man_text():
    with open(MAN) as f:
        return f.read().replace("\\-", "-")


class CliDocs(unittest.TestCase):
    def test_every_option_is_in_the_man_page(self):
        text = man_text()
        seen = 0
        for cmd in COMMANDS + (["manifest"] if fpull.run(["manifest", "--help"]).returncode == 0 else []):
            r = fpull.run([cmd, "--help"])
            self.assertEqual(r.returncode, 0, r.stderr)
            opts = re.findall(r"--([a-z][a-z0-9-]*)", r.stdout)
            self.assertIn("help", opts, r.stdout)
            for o in opts:
                seen += 1
                self.assertTrue("--" + o in text, "option --%s of %s missing from fpull.1" % (o, cmd))
            self.assertIn(cmd, text)
        self.assertGreater(seen, 20)

    def test_man_page_lints_clean(self):
        r = subprocess.run(["mandoc", "-Tlint", "-Wwarning", MAN], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        r = subprocess.run(["groff", "-ww", "-man", "-Tutf8", MAN], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stderr, "")
        plain = re.sub(".\b", "", r.stdout)  # groff's overstrike bold and underline
        for section in ("EXIT STATUS", "FEATURES", "MATCHING", "SECURITY", "ENVIRONMENT"):
            self.assertIn(section, plain)

    def test_every_mount_the_docs_show_is_nosuid_nodev(self):
        # Issue 20.2: an image mounted as the docs say must not run a setuid file as its
        # owner or open a device node on the host (as enroot, Apptainer, squashfuse mount).
        shown = 0
        docs = sorted(os.path.relpath(p, SRC) for p in glob.glob(os.path.join(SRC, "docs", "*.md")))
        for rel in ["man/fpull.1", "README.md"] + docs:
            with open(os.path.join(SRC, rel)) as f:
                text = f.read().replace("\\-", "-")
            # Fenced blocks line by line, then code spans and man page .B/.BR lines: where
            # a command is shown (fences first, so that a span never pairs across them).
            fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
            text = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
            cmds = [line for block in fenced for line in block.splitlines()]
            cmds += [c[0] or c[1] for c in re.findall(r"`([^`]+)`|^\.BR? (.*)$", text, re.M)]
            for cmd in cmds:
                if re.search(r"(^|\s)(squashfuse|mount -t|mount -o)\b", cmd):
                    shown += 1
                    self.assertIn("nosuid", cmd, "%s: %s" % (rel, cmd))
                    self.assertIn("nodev", cmd, "%s: %s" % (rel, cmd))
        self.assertGreaterEqual(shown, 4)

    def test_usage_errors_exit_2_with_one_line(self):
        for args in (["pull", "--no-such-option", "x"], ["pull"], ["pull", "Bad/Ref"],
                     ["inspect", "a", "b"], ["pull", "--jobs", "0", "x"],
                     ["pull", "ubuntu@sha256:abc"]):
            r = fpull.run(args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (args, r.stderr))
            self.assertTrue(lines[0].startswith("fpull: "), lines[0])

    def test_help_and_version(self):
        r = fpull.run(["--help"])
        self.assertEqual(r.returncode, 0)
        for cmd in COMMANDS:
            self.assertIn(cmd, r.stdout)
        # pull writes three formats (issue 25): the help names them all.
        self.assertNotIn("into a rootfs directory.", r.stdout)
        for fmt in ("bundle", "SquashFS"):
            self.assertIn(fmt, r.stdout)
        r = fpull.run(["version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^fpull \d+\.\d+\.\d+\n")
        self.assertEqual(fpull.run([]).returncode, 2)
