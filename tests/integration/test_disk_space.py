"""Disk space (issue 34.7): a pull that cannot fit says so before it writes ("needs N MB,
M free", and 'fpull cache prune' for the cache), and leaves nothing half-written; a write
that runs out of space anyway (layers that inflate far beyond the estimate) gets the same
numbers. Small tmpfs file systems stand for full disks (root only)."""
import os
import subprocess
import time

import faultproxy

import cases
import fpull
import images


class DiskSpace(cases.RegistryCase):
    tmp_prefix = "fpull-space-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        self.big = images.push_image(self.client, "d/big", "t", [
            [{"path": "big", "type": "file", "data": os.urandom(3000000)}]])
        self.ref = "%s/d/big:t" % self.reg.hostport

    def small_fs(self, name, size="1m"):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", d])
        return d

    def test_dest_too_small_is_refused_before_writing(self):
        small = self.small_fs("small")
        cache = os.path.join(self.tmp, "cache")
        cp = fpull.run(["pull", "--cache-dir", cache, self.ref, os.path.join(small, "r")],
                       check=1)
        line = fpull.error_line(cp.stderr)
        self.assertRegex(line, r"not enough disk space for %s: it needs about 6 MB and 1 MB "
                         r"are free there" % os.path.join(small, "r"))
        self.assertEqual(os.listdir(small), [])
        # Nothing was downloaded either.
        blobs = [f for _, _, fs in os.walk(cache) for f in fs
                 if self.big["layers"][0]["digest"].split(":")[1] in f]
        self.assertEqual(blobs, [])

    def test_cache_too_small_names_prune(self):
        cache = self.small_fs("cache")
        cp = fpull.run(["pull", "--cache-dir", cache, self.ref, os.path.join(self.tmp, "r")],
                       check=1)
        line = fpull.error_line(cp.stderr)
        self.assertIn("not enough disk space for the cache %s: the pull needs about 3 MB of "
                      "downloads and 1 MB are free; 'fpull cache prune' frees space" % cache,
                      line)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_one_file_system_counts_both(self):
        fs = self.small_fs("both", size="8m")
        cp = fpull.run(["pull", "--cache-dir", os.path.join(fs, "cache"), self.ref,
                        os.path.join(fs, "r")], check=1)
        line = fpull.error_line(cp.stderr)
        self.assertRegex(line, r"needs about 9 MB \(3 MB of downloads into the cache .*, 6 MB "
                               r"for .*\) and 8 MB are free; 'fpull cache prune'")

    def test_enospc_anyway_says_how_much(self):
        # Zeros inflate a thousandfold: the estimate fits, the unpack does not.
        images.push_image(self.client, "d/zeros", "t", [
            [{"path": "zeros", "type": "file", "data": b"\0" * 4000000}]])
        small = self.small_fs("small")
        cp = fpull.run(["pull", "--cache-dir", os.path.join(self.tmp, "c"),
                        "%s/d/zeros:t" % self.reg.hostport, os.path.join(small, "r")], check=1)
        line = fpull.error_line(cp.stderr)
        self.assertIn("No space left on device", line)
        self.assertRegex(line, r"%s needs about \d+ MB and \d+ MB are free there; the cache "
                         r"needs \d+ MB more" % os.path.join(small, "r"))
        # The cache is on another file system with room: pruning it would free nothing
        # here (issue 43.6).
        self.assertNotIn("fpull cache prune", line)
        self.assertEqual(os.listdir(small), [])

    def test_cache_full_during_the_download_keeps_no_partial(self):
        # The space was there when the pull began; another writer takes it meanwhile. The
        # partial download goes, so that the cache's file system is not left full.
        cache = self.small_fs("cache", size="8m")
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(65536, 0.1))
        p = subprocess.Popen([fpull.binary(), "pull", "--cache-dir", cache,
                              "%s/d/big:t" % proxy.hostport, os.path.join(self.tmp, "r")],
                             env=fpull.base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.addCleanup(p.kill)

        def partials():
            return [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
                    if f.endswith(".partial") and os.path.getsize(os.path.join(d, f)) > 0]
        for _ in range(300):
            if partials():
                break
            time.sleep(0.05)
        self.assertTrue(partials(), "no partial download appeared")
        with open(os.path.join(cache, "filler"), "wb") as f:
            try:
                for _ in range(16):
                    f.write(b"x" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        _, err = p.communicate(timeout=120)
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("No space left on device", err)
        self.assertEqual(partials(), [])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

