"""Progress on stderr only when it is a terminal; -q silences it. Under a pseudo-terminal
and a slowed proxy the frames are read back: bytes grow within a layer, cached layers are
marked as such, the unpack phase shows, and the totals are in human units."""
import os
import re
import shlex
import subprocess

import cases
import faultproxy
import fpull
import images

FRAME = re.compile(r"^([0-9a-f]{12}) (\S+ \S+) / (\S+ \S+) \| (\d+)/(\d+) layers?")
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def size(text):
    n, unit = text.split()
    return float(n) * UNITS[unit]


def frames(shown):
    """Every frame and line the terminal was sent, in order, without the erase codes."""
    return [f.replace("\x1b[K", "").strip() for f in re.split(r"[\r\n]+", shown) if f.strip()]


class Progress(cases.RegistryCase):
    def setUp(self):
        super().setUp()
        self.img = images.push_image(
            self.client, "p/q", "t", [[{"path": "a", "type": "file", "data": "a" * 5000}],
                                      [{"path": "b", "type": "file", "data": "b"}]])
        self.ref = "%s/p/q:t" % self.reg.hostport

    def on_tty(self, *args):
        """Runs fpull under a pseudo-terminal (util-linux script) and returns what it showed."""
        cmd = " ".join(shlex.quote(a) for a in [fpull.binary()] + list(args))
        cp = subprocess.run(["script", "-qec", cmd, "/dev/null"], env=fpull.base_env(),
                            capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        return cp.stdout

    def slow_image(self, repo="p/big", big=1500000, first=None):
        """An image with a large incompressible layer, served through a proxy that trickles
        blobs (64 KiB per 10 ms), so that its bytes arrive in many pieces."""
        img = images.push_image(self.client, repo, "t", [
            [{"path": "big", "type": "file", "data": os.urandom(big)}],
            [{"path": "small", "type": "file", "data": "s"}]])
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        self.proxy = proxy
        if first:
            proxy.add(r"/blobs/" + img["layers"][0]["digest"], times=1, **first)
        proxy.add(r"/blobs/", trickle=(65536, 0.01))
        return img, "%s/%s:t" % (proxy.hostport, repo)

    def test_progress_on_a_terminal(self):
        shown = self.on_tty("prefetch", "--cache-dir", os.path.join(self.tmp, "c1"), self.ref)
        self.assertIn("2/2 layers", shown)
        self.assertIn("done: 2 layers", shown)

    def test_quiet_and_pipes_show_none(self):
        shown = self.on_tty("prefetch", "-q", "--cache-dir", os.path.join(self.tmp, "c2"),
                            self.ref)
        self.assertNotIn("layers", shown)
        cp = fpull.run(["prefetch", "--cache-dir", os.path.join(self.tmp, "c3"), self.ref],
                       check=0)
        self.assertNotIn("/s", cp.stderr)
        self.assertNotIn("\r", cp.stderr)

    def test_bytes_of_one_layer_grow_frame_by_frame(self):
        img, ref = self.slow_image()
        big = img["layers"][0]
        shown = self.on_tty("prefetch", "--cache-dir", os.path.join(self.tmp, "c"), ref)
        seen = []
        for f in frames(shown):
            m = FRAME.match(f)
            if m and m.group(1) == big["digest"].split(":")[1][:12]:
                self.assertAlmostEqual(size(m.group(3)), big["size"], delta=big["size"] / 100)
                seen.append(size(m.group(2)))
        # Several frames while the layer arrives, not one when it is complete.
        partial = [s for s in seen if s < big["size"] * 0.99]
        self.assertGreaterEqual(len(set(partial)), 3, shown)
        self.assertEqual(seen, sorted(seen), shown)
        self.assertRegex(shown, r"\| \d+(\.\d)? [kM]B/s \| ETA \d+s")
        # A header naming the image and its total, and a final line in human units.
        self.assertRegex(shown, r"%s: 2 layers, 1\.\d MB" % re.escape(ref))
        self.assertRegex(shown, r"done: 2 layers, 1\.\d MB downloaded")
        self.assertRegex(shown, r", 2 layers, 1\.\d MB downloaded, 0 B from cache")
        self.assertNotRegex(shown, r"\d bytes")

    def test_second_pull_marks_cached_and_shows_unpack(self):
        cache = os.path.join(self.tmp, "c")
        first = self.on_tty("pull", "--cache-dir", cache, self.ref, os.path.join(self.tmp, "r1"))
        self.assertRegex(first, r"unpacking 2/2")
        self.assertNotIn("cached", first)
        again = self.on_tty("pull", "--cache-dir", cache, self.ref, os.path.join(self.tmp, "r2"))
        for layer in self.img["layers"]:
            self.assertIn("%s cached" % layer["digest"].split(":")[1][:12], again)
        self.assertIn("2/2 layers (2 cached)", again)
        self.assertRegex(again, r"unpacking 2/2")
        # Cached bytes are never counted as downloaded, nor given a speed.
        self.assertRegex(again, r"done: 2 layers \(2 cached, \d+(\.\d)? [k]?B\), 0 B downloaded\n")
        self.assertNotRegex(again, r"B/s")
        self.assertRegex(again, r", 2 layers, 0 B downloaded, (\d+ B|\d+\.\d kB) from cache")

    def test_prefetch_counts_each_image_from_zero(self):
        img, ref = self.slow_image("p/first", big=300000)
        other = images.push_image(self.client, "p/second", "t",
                                  [[{"path": "x", "type": "file", "data": "x" * 3000}]])
        ref2 = "%s/p/second:t" % self.reg.hostport
        shown = self.on_tty("prefetch", "--cache-dir", os.path.join(self.tmp, "c"), ref, ref2)
        lines = frames(shown)
        start = [i for i, f in enumerate(lines) if f.startswith(ref2 + ": 1 layer, ")]
        self.assertEqual(len(start), 1, shown)
        after = lines[start[0] + 1:]
        counted = [FRAME.match(f) or re.match(r"()()()(\d+)/(\d+) layers?", f) for f in after]
        counted = [m for m in counted if m]
        self.assertTrue(counted, shown)
        for m in counted:
            self.assertEqual(m.group(5), "1", shown)  # this image's layers only
        for f in after:
            m = re.search(r"\| (\S+ \S+) / (\S+ \S+)", f)
            if m:
                self.assertLessEqual(size(m.group(1)), other["layers"][0]["size"], shown)

    def test_resumed_layer_counts_each_byte_once(self):
        img, ref = self.slow_image(first={"cut_after": 500000})
        big = img["layers"][0]
        shown = self.on_tty("prefetch", "--cache-dir", os.path.join(self.tmp, "c"), ref)
        seen = [size(m.group(2)) for m in map(FRAME.match, frames(shown))
                if m and m.group(1) == big["digest"].split(":")[1][:12]]
        self.assertEqual(seen, sorted(seen), shown)  # never back to 0 after the cut
        self.assertLessEqual(max(seen), big["size"] + 50, shown)
        self.assertEqual(self.proxy.count(big["digest"]), 2)  # it was cut and resumed
        self.assertRegex(shown, r"done: 2 layers, 1\.\d MB downloaded")

    def test_lines_for_pipes_and_logs(self):
        # --progress=lines: whole lines on a pipe (a batch job's output), one at most every
        # 5 s while bytes arrive; never a carriage return or an escape sequence.
        img, ref = self.slow_image(big=2000000)
        self.proxy.clear()
        self.proxy.add(r"/blobs/", trickle=(32768, 0.1))
        cp = fpull.run(["pull", "--progress=lines", "--cache-dir", os.path.join(self.tmp, "c"),
                        ref, os.path.join(self.tmp, "root")], check=0)
        self.assertNotIn("\r", cp.stderr)
        self.assertNotIn("\x1b", cp.stderr)
        lines = cp.stderr.splitlines()
        self.assertRegex(lines[0], r"^%s: 2 layers, 2\.0 MB$" % re.escape(ref))
        periodic = [ln for ln in lines[1:] if re.match(
            r"^%s: \d/2 layers, \S+ \S+ / 2\.0 MB downloaded, \d+s$" % re.escape(ref), ln)]
        self.assertGreaterEqual(len(periodic), 1, cp.stderr)
        self.assertTrue(any(re.match(r"^%s: done: 2 layers \(0 cached\), 2\.0 MB downloaded in "
                                     r"\d+s$" % re.escape(ref), ln) for ln in lines), cp.stderr)
        # none: only the result line; a wrong word is a usage error.
        cp = fpull.run(["pull", "--progress=none", "--cache-dir", os.path.join(self.tmp, "c"),
                        "--force", ref, os.path.join(self.tmp, "root")], check=0)
        self.assertEqual(len(cp.stderr.splitlines()), 1, cp.stderr)
        cp = fpull.run(["pull", "--progress=line", ref, os.path.join(self.tmp, "r2")], check=2)
        self.assertIn("--progress takes bar, lines or none, not line", cp.stderr)
