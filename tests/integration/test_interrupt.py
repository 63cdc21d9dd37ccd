"""Terminal manners (issue 34.5): under a pseudo-terminal the progress line fits the
terminal's width (COLUMNS, the window size, a resize with SIGWINCH) and never leaves a row
behind; Ctrl-C and SIGTERM print one line, leave nothing beside DEST, keep the cache's
partial download for the next pull, and exit 130 and 143. The registry is slowed by the
fault proxy so that the signal comes mid-pull."""
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time

import cases
import faultproxy
import fpull
import images


def visible_frames(shown):
    """The text of every frame drawn (split at carriage returns and newlines), without the
    escape sequences."""
    plain = re.sub(r"\x1b\[[0-9]*[A-Za-z]", "", shown)
    return [f for f in re.split(r"[\r\n]+", plain) if f.strip()]


class Interrupt(cases.RegistryCase):
    tmp_prefix = "fpull-intr-"

    def setUp(self):
        super().setUp()
        self.img = images.push_image(self.client, "i/big", "t", [
            [{"path": "big", "type": "file", "data": os.urandom(2000000)}],
            [{"path": "small", "type": "file", "data": "s"}]])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        self.proxy.add(r"/blobs/", trickle=(16384, 0.05))
        self.ref = "%s/i/big:t" % self.proxy.hostport
        self.cache = os.path.join(self.tmp, "cache")
        self.out = os.path.join(self.tmp, "out")
        os.mkdir(self.out)

    def start_on_pty(self, args, cols=80):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        p = subprocess.Popen([fpull.binary()] + args, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=slave,
                             env=fpull.base_env({"COLUMNS": None}))
        os.close(slave)
        self.addCleanup(os.close, master)
        return p, master

    def read_pty(self, master, until=None, timeout=30):
        out = b""
        end = time.time() + timeout
        while time.time() < end:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                out += data
                if until and until(out.decode(errors="replace")):
                    break
        return out.decode(errors="replace")

    def beside(self):
        return sorted(n for n in os.listdir(self.out) if n.startswith("."))

    def interrupt_mid_pull(self, extra, dest, sig, code):
        p, master = self.start_on_pty(["pull", "--cache-dir", self.cache] + extra +
                                      [self.ref, dest])
        shown = self.read_pty(master, until=lambda s: re.search(r"\d+\.\d kB / 2\.0 MB", s)
                              is not None)
        self.assertTrue(self.beside(), "nothing was being written beside DEST yet:\n" + shown)
        p.send_signal(sig)
        shown += self.read_pty(master, timeout=20)
        rc = p.wait(timeout=20)
        self.assertEqual(rc, code, shown)
        lines = [l for l in visible_frames(shown)]
        self.assertRegex(lines[-1], r"^fpull: interrupted \(%s\); DEST is as it was" %
                         ("SIGINT" if sig == signal.SIGINT else "SIGTERM"))
        self.assertEqual([l for l in lines if l.startswith("fpull: ")], [lines[-1]])
        # The line starts on a row of its own, not glued to the bar.
        self.assertRegex(shown.replace("\x1b[K", ""), r"\nfpull: interrupted")
        self.assertEqual(self.beside(), [])
        self.assertFalse(os.path.exists(dest))
        # The cache keeps the partial download: the next pull resumes it.
        self.proxy.clear()
        cp = fpull.run(["pull", "--json", "--cache-dir", self.cache] + extra +
                       [self.ref, dest], check=0)
        ranges = [r for r in self.proxy.requests if "range" in r["headers"]]
        self.assertTrue(ranges, "the partial download was not resumed")
        return cp

    def test_sigint_mid_pull_leaves_nothing_beside_dest(self):
        self.interrupt_mid_pull([], os.path.join(self.out, "rootfs"), signal.SIGINT, 130)

    def test_resumed_bytes_are_not_speed(self):
        dest = os.path.join(self.out, "rootfs")
        p, master = self.start_on_pty(["pull", "--cache-dir", self.cache, self.ref, dest])
        self.read_pty(master, until=lambda s: re.search(r"[5-9]\d\d\.\d kB / 2\.0 MB", s)
                      is not None)
        p.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=20), 130)
        # Again, as slow: the bytes kept are shown as resumed, the speed is the wire's.
        p, master = self.start_on_pty(["pull", "--cache-dir", self.cache, self.ref, dest])
        shown = self.read_pty(master, timeout=60)
        self.assertEqual(p.wait(timeout=60), 0, shown)
        frames = visible_frames(shown)
        rates = [float(m.group(1)) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
                 for m in (re.search(r"\| (\S+) (kB|MB|GB)/s", f) for f in frames) if m]
        self.assertTrue(rates, shown)
        # 16 KiB every 50 ms is about 330 kB/s; the resumed half megabyte is not in it.
        self.assertLess(max(rates), 1e6, shown)
        done = [f for f in frames if f.startswith("done:")]
        self.assertTrue(any("resumed" in f for f in frames), shown)
        self.assertIn("resumed", done[0] if done else "", shown)

    def test_sigterm_mid_squashfs_pull(self):
        self.interrupt_mid_pull(["--format", "squashfs"], os.path.join(self.out, "img.sqsh"),
                                signal.SIGTERM, 143)

    def test_sigint_mid_bundle_pull(self):
        self.interrupt_mid_pull(["--format", "bundle"], os.path.join(self.out, "b"),
                                signal.SIGINT, 130)

    def test_progress_fits_80_columns_under_script(self):
        cmd = "%s pull --cache-dir %s %s %s" % (fpull.binary(), self.cache, self.ref,
                                                os.path.join(self.out, "r"))
        cp = subprocess.run(["script", "-qec", cmd, "/dev/null"],
                            env=fpull.base_env({"COLUMNS": "80"}), capture_output=True,
                            text=True, timeout=120, cwd=self.tmp)
        self.assertEqual(cp.returncode, 0, cp.stdout)
        frames = [f for f in visible_frames(cp.stdout) if "layer" in f]
        self.assertGreater(len(frames), 5, cp.stdout)
        for f in frames:
            if f.startswith(self.ref) or f.startswith("done:"):
                continue
            self.assertLessEqual(len(f), 79, repr(f))
        self.assertIn(", 2 layers,", cp.stdout)

    def test_resize_redraws_within_the_new_width(self):
        p, master = self.start_on_pty(["pull", "--cache-dir", self.cache, self.ref,
                                       os.path.join(self.out, "r")], cols=120)
        # Until a frame wider than 80 columns is on the screen: the first ones, before the
        # speed and the time left are known, are shorter.
        shown = self.read_pty(master, until=lambda s: any(
            len(f) > 80 for f in visible_frames(s) if "layers |" in f))
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        p.send_signal(signal.SIGWINCH)
        after = self.read_pty(master, timeout=60)
        self.assertEqual(p.wait(timeout=60), 0, shown + after)
        # The wide frame (over 80 columns) takes three rows at 40: the first redraw goes up
        # to its first row and erases below, and every later frame fits.
        wide = max(len(f) for f in visible_frames(shown) if "layers |" in f)
        self.assertGreater(wide, 80, shown)
        self.assertIn("\r\x1b[%dA\x1b[J" % ((wide - 1) // 40), after)
        for f in visible_frames(after):
            if "layer" in f and not f.startswith(self.ref) and not f.startswith("done:"):
                self.assertLessEqual(len(f), 39, repr(f))
