"""The bash completion offers the subcommands and each command's real options."""
import os
import subprocess
import unittest

import fpull

SCRIPT = os.path.join(os.environ["FPULL_SRC_DIR"], "scripts", "fpull.bash-completion")


def complete(words):
    """Runs the completion function for the command line WORDS (last one being completed)."""
    bindir = os.path.dirname(fpull.binary())
    quoted = " ".join("'%s'" % w for w in words)
    script = ('PATH="%s:$PATH"; source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _fpull; '
              'printf "%%s\\n" "${COMPREPLY[@]}"' % (bindir, SCRIPT, quoted, len(words) - 1))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return set(r.stdout.split())


class Completion(unittest.TestCase):
    def test_subcommands(self):
        self.assertEqual(complete(["fpull", "p"]), {"pull", "prefetch"})
        self.assertIn("features", complete(["fpull", ""]))

    def test_options_follow_the_option_table(self):
        got = complete(["fpull", "pull", "--"])
        for o in ("--output", "--force", "--features", "--platform", "--json", "--offline"):
            self.assertIn(o, got)
        self.assertNotIn("--type", got)
        self.assertEqual(complete(["fpull", "inspect", "--pl"]), {"--platform"})

    def test_type_values(self):
        self.assertEqual(complete(["fpull", "manifest", "push", "--type", ""]), {"oci", "docker"})

    def test_format_values_and_config_command(self):
        self.assertEqual(complete(["fpull", "pull", "--format", ""]),
                         {"dir", "bundle", "squashfs"})
        self.assertEqual(complete(["fpull", "con"]), {"config"})
        self.assertIn("--all", complete(["fpull", "prefetch", "--"]))
