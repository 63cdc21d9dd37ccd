"""fpull's rootfs must equal what skopeo copy + umoci raw unpack make of the same image."""
import os
import subprocess
import unittest

import cases
import fpull
import images

LAYERS = [
    [
        {"path": "etc", "type": "dir", "mode": 0o755},
        {"path": "etc/passwd", "data": "root:x:0:0:root:/root:/bin/sh\n"},
        {"path": "etc/shadow", "data": "root:*::0:::::\n", "mode": 0o600},
        {"path": "etc/motd", "data": "old motd\n"},
        {"path": "bin", "type": "dir"},
        {"path": "bin/busy", "data": "#!/bin/sh\n" + "x" * 5000, "mode": 0o755},
        {"path": "bin/sh", "type": "symlink", "target": "busy"},
        {"path": "bin/ls", "type": "hardlink", "target": "bin/busy"},
        {"path": "usr/bin/env", "type": "symlink", "target": "/bin/busy"},
        {"path": "lib", "type": "dir", "mode": 0o750},
        {"path": "lib/a.so", "data": bytes(range(256)) * 10},
        {"path": "lib/sub/b.so", "data": "b"},
        {"path": "opt/app", "type": "dir"},
        {"path": "opt/app/conf", "data": "v1"},
        {"path": "opt/app/data/cache", "data": "stale"},
        {"path": "srv", "type": "dir", "mode": 0o2775},
        {"path": "tmp", "type": "dir", "mode": 0o1777},
        {"path": "run/pipe", "type": "fifo", "mode": 0o620},
        {"path": "ro", "type": "dir", "mode": 0o555},
        {"path": "ro/inside", "data": "r", "mode": 0o444},
    ],
    [
        images.whiteout("etc/motd"),
        images.whiteout("lib/sub"),
        images.opaque("opt/app"),
        {"path": "opt/app/conf", "data": "v2", "mode": 0o640},
        {"path": "etc/motd.d/hello", "data": "hi\n"},
        {"path": "bin/cat", "type": "hardlink", "target": "bin/busy"},
        {"path": "lib/link-to-dir", "type": "symlink", "target": "../opt/app"},
        {"path": "bin/busy", "data": "#!/bin/sh\nnew busy\n", "mode": 0o755},
    ],
    [
        images.whiteout("run/pipe"),
        {"path": "etc/motd", "data": "new motd\n", "mode": 0o600},
        {"path": "lib/sub", "type": "symlink", "target": "/opt"},
        {"path": "home/user/.profile", "data": "export X=1\n"},
        {"path": "empty", "type": "file", "data": b""},
    ],
]


class CrossCheck(cases.RegistryCase):
    tmp_prefix = "fpull-xcheck-"
    tools = ("skopeo", "umoci")

    def run_tool(self, argv):
        cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180,
                            env=fpull.base_env())
        if cp.returncode != 0:
            self.fail("%s: exit %d\n%s%s" % (" ".join(argv), cp.returncode,
                                             cp.stdout.decode(errors="replace"),
                                             cp.stderr.decode(errors="replace")))

    def reference_rootfs(self, ref):
        layout = os.path.join(self.tmp, "layout")
        out = os.path.join(self.tmp, "umoci-rootfs")
        self.run_tool(["skopeo", "copy", "--quiet", "--src-tls-verify=false",
                       "docker://%s/%s" % (self.reg.hostport, ref), "oci:%s:ref" % layout])
        self.run_tool(["umoci", "raw", "unpack", "--rootless", "--image", layout + ":ref", out])
        return out

    def fpull_rootfs(self, ref):
        dest = os.path.join(self.tmp, "fpull-rootfs")
        cp = fpull.run(["pull", "--cache-dir", os.path.join(self.tmp, "cache"),
                        "%s/%s" % (self.reg.hostport, ref), dest])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return dest

    @staticmethod
    def tree(root):
        # Directories that no layer names get the time of the unpack, in both tools;
        # every other entry must carry its mtime from the layer.
        return {p: (rec[:3] if rec[0] == "dir" else rec)
                for p, rec in fpull.tree(root, mtimes=True).items()}

    def compare(self, ref):
        want = self.tree(self.reference_rootfs(ref))
        got = self.tree(self.fpull_rootfs(ref))
        # Sanity: the reference tool did apply the layers, so equality means something.
        self.assertIn("opt/app/conf", want)
        self.assertNotIn("etc/.wh.motd", want)
        only_ref = sorted(set(want) - set(got))
        only_fpull = sorted(set(got) - set(want))
        self.assertEqual((only_ref, only_fpull), ([], []),
                         "file lists differ (only umoci, only fpull)")
        diffs = ["%s: umoci %r, fpull %r" % (p, want[p], got[p])
                 for p in sorted(want) if want[p] != got[p]]
        self.assertEqual(diffs, [], "entries differ:\n" + "\n".join(diffs))
        return got

    def test_docker_gzip_matches_umoci(self):
        images.push_image(self.client, "xc/docker", "t", LAYERS, fmt="docker")
        got = self.compare("xc/docker:t")
        self.assertEqual(got["etc/motd"][:2], ("file", 0o600))
        self.assertEqual(got["lib/sub"], ("symlink", 0o777, "/opt", 1700000000))

    def test_oci_uncompressed_matches_umoci(self):
        images.push_image(self.client, "xc/oci", "t", LAYERS, fmt="oci", compression=None)
        self.compare("xc/oci:t")

    def test_oci_index_matches_umoci(self):
        if os.uname().machine != "x86_64":
            self.skipTest("skopeo copies the host's entry; this host is not amd64")
        amd = images.push_image(self.client, "xc/idx", None, LAYERS, fmt="oci")
        arm = images.push_image(self.client, "xc/idx", None, LAYERS[:1], fmt="oci",
                                architecture="arm64", variant="v8")
        images.push_index(self.client, "xc/idx", "t", [
            (arm, {"os": "linux", "architecture": "arm64", "variant": "v8"}),
            (amd, {"os": "linux", "architecture": "amd64"})])
        self.compare("xc/idx:t")


if __name__ == "__main__":
    unittest.main()
