"""Progress on stderr only when it is a terminal; -q silences it."""
import os
import shlex
import subprocess

import cases
import fpull
import images


class Progress(cases.RegistryCase):
    def setUp(self):
        super().setUp()
        images.push_image(self.client, "p/q", "t", [[{"path": "a", "type": "file", "data": "a" * 5000}],
                                          [{"path": "b", "type": "file", "data": "b"}]])
        self.ref = "%s/p/q:t" % self.reg.hostport

    def on_tty(self, *args):
        """Runs fpull under a pseudo-terminal (util-linux script) and returns what it showed."""
        cmd = " ".join(shlex.quote(a) for a in [fpull.binary()] + list(args))
        cp = subprocess.run(["script", "-qec", cmd, "/dev/null"], env=fpull.base_env(),
                            capture_output=True, text=True, timeout=60)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        return cp.stdout

    def test_progress_on_a_terminal(self):
        shown = self.on_tty("prefetch", "--cache-dir", os.path.join(self.tmp, "c1"), self.ref)
        self.assertIn("2/2 layers", shown)
        self.assertIn("MB/s", shown)

    def test_quiet_and_pipes_show_none(self):
        shown = self.on_tty("prefetch", "-q", "--cache-dir", os.path.join(self.tmp, "c2"),
                            self.ref)
        self.assertNotIn("layers", shown)
        cp = fpull.run(["prefetch", "--cache-dir", os.path.join(self.tmp, "c3"), self.ref],
                       check=0)
        self.assertNotIn("MB/s", cp.stderr)
        self.assertNotIn("\r", cp.stderr)
