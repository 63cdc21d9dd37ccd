"""Fan-out on one cache, as in a job prologue on many nodes at once (docs/cluster.md):
32 concurrent `fpull prefetch` processes download each blob exactly once, counted at a
proxy in front of the real registry that slows blobs down so that the processes overlap."""
import concurrent.futures
import json
import os
import re
import time

import cases
import faultproxy
import fpull
import images

N = 32


class Fanout(cases.RegistryCase):
    tmp_prefix = "fpull-fanout-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        os.mkdir(self.cache, 0o755)
        layers = [[{"path": "data/%d" % i, "data": os.urandom(512 * 1024)}] for i in range(3)]
        self.img = images.push_image(self.client, "hpc/fanout", "v1", layers)
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        # 32 KiB every 10 ms: each blob takes a good fraction of a second, so all N
        # processes are there while the first one is still downloading.
        self.proxy.add(r"/blobs/sha256:", trickle=(32768, 0.01))

    def test_32_concurrent_prefetches_download_each_blob_once(self):
        ref = "%s/hpc/fanout:v1" % self.proxy.hostport

        def one(i):
            return fpull.run(["prefetch", "--json", "-q", "--cache-dir", self.cache, ref],
                             timeout=280)

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(N) as ex:
            results = list(ex.map(one, range(N)))
        wall = time.monotonic() - t0
        downloaded = 0
        for cp in results:
            self.assertEqual(cp.returncode, 0, cp.stderr)
            downloaded += json.loads(cp.stdout)[0]["bytes_downloaded"]
        gets = {}
        for r in self.proxy.requests:
            m = re.search(r"/blobs/(sha256:[0-9a-f]{64})$", r["path"])
            if r["method"] == "GET" and m:
                gets[m.group(1)] = gets.get(m.group(1), 0) + 1
        wanted = [l["digest"] for l in self.img["layers"]] + [self.img["config_digest"]]
        self.assertEqual(sorted(gets), sorted(wanted))
        for d in wanted:
            self.assertEqual(gets[d], 1, gets)
        # Every byte crossed the network once, whichever process fetched it.
        total = sum(l["size"] for l in self.img["layers"]) + len(self.img["config"])
        self.assertEqual(downloaded, total)
        # No partial downloads or other debris in the cache.
        names = sorted(os.listdir(os.path.join(self.cache, "blobs", "sha256")))
        self.assertEqual(names, sorted(d.split(":")[1] for d in wanted + [self.img["digest"]]))
        manifests = sum(1 for r in self.proxy.requests if "/manifests/" in r["path"])
        print("fan-out: %d processes, %d blobs of %d bytes in all, blob GETs %s, "
              "%d manifest requests, %.1f s wall" % (N, len(wanted), total,
                                                     sorted(gets.values()), manifests, wall))
