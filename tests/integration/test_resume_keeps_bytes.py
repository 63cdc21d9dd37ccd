"""Resume keeps every byte received (contract v3, issue 11.5): a blob whose every GET is
cut part way costs its size, plus at most one buffer per cut, counted in the fault proxy
as the bytes that actually reached the client."""
import os
import tempfile
import unittest

import cases
import faultproxy
import fpull
import images

BUFFER = 64 * 1024


class ResumeKeepsBytes(cases.RegistryCase):
    tmp_prefix = "fpull-resume-"

    def check(self, **rule):
        data = os.urandom(1573560)
        img = images.push_image(self.client, "r/big", "v1",
                                [[{"path": "big", "type": "file", "data": data}]])
        layer = img["layers"][0]
        size = layer["size"]
        with faultproxy.FaultProxy(self.reg.url) as p:
            cut = size // 3 + 1000
            p.add(r"/blobs/" + layer["digest"], times=2, **{k: cut for k in rule})
            cache = os.path.join(self.tmp, "cache")
            out = os.path.join(self.tmp, "out")
            fpull.run(["pull", "-q", "--cache-dir", cache, "%s/r/big:v1" % p.hostport, out],
                      check=0)
            gets = p.matching(r"/blobs/" + layer["digest"])
            served = sum(v for k, v in p.body_bytes.items() if layer["digest"] in k)
        with open(os.path.join(out, "big"), "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(len(gets), 3)
        resets = len(gets) - 1
        self.assertLessEqual(served, size + resets * BUFFER,
                             "served %d for a blob of %d" % (served, size))
        # Each retry starts where the bytes received end.
        self.assertIsNone(gets[0]["headers"].get("range"))
        starts = [int(g["headers"]["range"].split("=")[1].rstrip("-")) for g in gets[1:]]
        self.assertEqual(starts, [cut, 2 * cut])

    def test_reset_mid_blob_keeps_every_byte(self):
        self.check(reset_after=True)

    def test_closed_mid_blob_keeps_every_byte(self):
        self.check(cut_after=True)


if __name__ == "__main__":
    unittest.main()
