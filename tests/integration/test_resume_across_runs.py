"""A prefetch killed mid-blob keeps its partial file; the next run asks only for the rest."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import faultproxy
import fpull
import images
import registry

BIG = os.urandom(3 * 1024 * 1024)


class ResumeAcrossRuns(unittest.TestCase):
    def test_killed_prefetch_resumes_with_range(self):
        tmp = tempfile.mkdtemp(prefix="fpull-resume-")
        self.addCleanup(fpull.rmtree, tmp)
        with registry.Registry() as reg:
            img = images.push_image(images.Client(reg.url), "r/big", "v1",
                                    [[{"path": "big", "type": "file", "data": BIG}]],
                                    compression=None)
            layer = img["layers"][0]["digest"]
            with faultproxy.FaultProxy(reg.url) as proxy:
                # The first answer sends 1 MiB and then hangs, so the run can be killed.
                proxy.add(r"/blobs/" + layer, stall=(1024 * 1024, 60), times=1)
                cache = os.path.join(tmp, "cache")
                ref = "%s/r/big:v1" % proxy.hostport
                p = subprocess.Popen([fpull.binary(), "prefetch", "-q", "--cache-dir", cache, ref],
                                     env=fpull.base_env(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
                partial = os.path.join(cache, "tmp", "u%d" % os.geteuid(),
                                       layer.split(":")[1] + ".partial")
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if os.path.exists(partial) and os.path.getsize(partial) >= 1024 * 1024:
                        break
                    time.sleep(0.05)
                p.send_signal(signal.SIGKILL)
                p.wait()
                self.assertEqual(os.path.getsize(partial), 1024 * 1024)
                cp, doc = fpull.run_json(["prefetch", "--cache-dir", cache, ref])
                # Only the rest of the layer (and the small config) came over the network.
                self.assertLess(doc[0]["bytes_downloaded"],
                                img["layers"][0]["size"] - 1024 * 1024 + 4096)
                gets = [r for r in proxy.matching("/blobs/" + layer) if r["method"] == "GET"]
                self.assertEqual(gets[-1]["headers"].get("range"), "bytes=%d-" % (1024 * 1024))
                blob = os.path.join(cache, "blobs", "sha256", layer.split(":")[1])
                with open(blob, "rb") as f:
                    self.assertEqual(f.read(), images.tar_layer(
                        [{"path": "big", "type": "file", "data": BIG}]))
                self.assertFalse(os.path.exists(partial))
