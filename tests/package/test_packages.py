"""The packages a site installs (issue 34.9): packaging/debian builds fpull, libfpull0,
libfpull-dev and fpull-slurm with dpkg-buildpackage -b, and packaging/rpm/fpull.spec builds
with rpmbuild (Debian's rpm). Each is unpacked into a scratch root, its files checked, and
the demo's pull run with the packaged binary and data against a real registry; the man
page renders. Slow (two whole builds): ctest runs these as package.deb and package.rpm."""
import glob
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

import demo_index
import fpull
import images
import registry

SRC = fpull.SRC_DIR


def source_files():
    out = subprocess.run(["git", "-C", SRC, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.isfile(os.path.join(SRC, f))]


class Packages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-packages-")
        self.addCleanup(fpull.rmtree, self.tmp)

    def copy_tree(self, dest):
        for f in source_files():
            os.makedirs(os.path.join(dest, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(SRC, f), os.path.join(dest, f))

    def run_cmd(self, args, cwd=None, env=None, timeout=1500):
        e = dict(os.environ)
        e.update(env or {})
        cp = subprocess.run(args, cwd=cwd, env=e, capture_output=True, text=True,
                            timeout=timeout)
        self.assertEqual(cp.returncode, 0, "%s:\n%s\n%s" % (" ".join(args), cp.stdout[-4000:],
                                                            cp.stderr[-4000:]))
        return cp

    def demo_pull(self, root, libdir):
        """The demo's pull with the packaged binary, data and man page."""
        fpull_bin = os.path.join(root, "usr/bin/fpull")
        reg = registry.Registry().start()
        self.addCleanup(reg.stop)
        info = demo_index.build_demo(images.Client(reg.url))
        ref = "%s/%s:%s" % (reg.hostport, info["repo"], info["tag"])
        env = fpull.base_env({"FPULL_DATA_DIR": os.path.join(root, "usr/share/fpull")})
        out = os.path.join(self.tmp, "rootfs")
        cp = subprocess.run([fpull_bin, "pull", "--json", "--platform",
                             "linux/amd64:broadwell", ref, out], env=env,
                            capture_output=True, text=True, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        digests = {d: name for name, d, _ in info["entries"]}
        import json
        doc = json.loads(cp.stdout)
        self.assertIn(doc["manifest_digest"], digests)
        with open(os.path.join(out, "etc/fpull-demo")) as f:
            self.assertEqual(f.readline().strip(), digests[doc["manifest_digest"]])
        man = glob.glob(os.path.join(root, "usr/share/man/man1/fpull.1*"))
        self.assertEqual(len(man), 1, man)
        cp = subprocess.run(["man", "-l", man[0]], capture_output=True, text=True,
                            env=dict(os.environ, MANWIDTH="80"), timeout=60)
        self.assertIn("IMAGE LAYOUTS", cp.stdout)
        # The library and its development files work together from the scratch root.
        pc = os.path.join(root, libdir, "pkgconfig")
        cp = self.run_cmd(["pkg-config", "--define-prefix", "--modversion", "fpull"],
                          env={"PKG_CONFIG_PATH": pc})
        self.assertEqual(cp.stdout.strip(), "0.1.0")

    def test_deb(self):
        for tool in ("dpkg-buildpackage", "dh"):
            if not shutil.which(tool):
                self.fail("%s is not installed (scripts/deps.sh: dpkg-dev, debhelper)" % tool)
        tree = os.path.join(self.tmp, "fpull-0.1.0")
        self.copy_tree(tree)
        shutil.copytree(os.path.join(tree, "packaging/debian"), os.path.join(tree, "debian"))
        self.run_cmd(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree,
                     env={"DEB_BUILD_OPTIONS": "nocheck parallel=2"})
        arch = self.run_cmd(["dpkg", "--print-architecture"]).stdout.strip()
        multiarch = self.run_cmd(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
        root = os.path.join(self.tmp, "root")
        want = {
            "fpull": ["usr/bin/fpull", "usr/share/man/man1/fpull.1.gz",
                      "usr/share/fpull/cputags.yaml",
                      "usr/share/bash-completion/completions/fpull",
                      "usr/lib/systemd/system/fpull-serve.service",
                      "usr/lib/systemd/system/fpull-serve.socket"],
            "libfpull0": ["usr/lib/%s/libfpull.so.0" % multiarch],
            "libfpull-dev": ["usr/include/fpull/fpull.h", "usr/lib/%s/libfpull.a" % multiarch,
                             "usr/lib/%s/libfpull.so" % multiarch,
                             "usr/lib/%s/pkgconfig/fpull.pc" % multiarch,
                             "usr/lib/%s/cmake/fpull/fpullConfig.cmake" % multiarch],
            "fpull-slurm": ["usr/lib/%s/slurm-wlm/fpull_spank.so" % multiarch,
                            "usr/share/fpull/slurm/fpull.conf"],
        }
        for pkg, files in want.items():
            deb = os.path.join(self.tmp, "%s_0.1.0_%s.deb" % (pkg, arch))
            self.assertTrue(os.path.exists(deb), os.listdir(self.tmp))
            self.run_cmd(["dpkg-deb", "-x", deb, root])
            for f in files:
                self.assertTrue(os.path.lexists(os.path.join(root, f)), (pkg, f))
        depends = self.run_cmd(["dpkg-deb", "-f", os.path.join(
            self.tmp, "fpull-slurm_0.1.0_%s.deb" % arch), "Depends"]).stdout
        self.assertIn("fpull (= 0.1.0)", depends)
        # Issue 41.7: a runtime to run the containers, the store's and SquashFS's tools
        # recommended, and the plugin's run_dir made by the package (root's, 0755).
        self.assertIn("runc | crun", depends)
        recommends = self.run_cmd(["dpkg-deb", "-f", os.path.join(
            self.tmp, "fpull-slurm_0.1.0_%s.deb" % arch), "Recommends"]).stdout
        for tool in ("fuse-overlayfs", "squashfuse", "squashfs-tools"):
            self.assertIn(tool, recommends)
        run_dir = os.path.join(root, "var/lib/fpull-slurm")
        self.assertTrue(os.path.isdir(run_dir))
        self.demo_pull(root, "usr/lib/" + multiarch)

    def test_rpm(self):
        for tool in ("rpmbuild", "rpm2archive"):
            if not shutil.which(tool):
                self.fail("%s is not installed (scripts/deps.sh: rpm)" % tool)
        top = os.path.join(self.tmp, "rpmbuild")
        os.makedirs(os.path.join(top, "SOURCES"))
        tree = os.path.join(self.tmp, "fpull-0.1.0")
        self.copy_tree(tree)
        with tarfile.open(os.path.join(top, "SOURCES", "fpull-0.1.0.tar.gz"), "w:gz") as t:
            t.add(tree, arcname="fpull-0.1.0")
        # Debian's rpm has no Fedora package database: the build dependencies are Debian's.
        self.run_cmd(["rpmbuild", "-bb", "--nodeps", "--define", "_topdir " + top,
                      "--define", "_smp_mflags -j2",
                      os.path.join(tree, "packaging/rpm/fpull.spec")])
        rpms = glob.glob(os.path.join(top, "RPMS", "*", "*.rpm"))
        names = sorted(os.path.basename(r).rsplit("-", 2)[0] for r in rpms)
        self.assertEqual(names, ["fpull", "fpull-slurm", "libfpull-devel", "libfpull0"])
        root = os.path.join(self.tmp, "root")
        os.makedirs(root)
        for r in rpms:
            self.run_cmd(["rpm2archive", r])  # r.tgz beside it
            with tarfile.open(r + ".tgz") as t:
                t.extractall(root)
        libdir = "usr/lib64" if os.path.isdir(os.path.join(root, "usr/lib64")) else "usr/lib"
        for f in ("usr/bin/fpull", libdir + "/libfpull.so.0", libdir + "/libfpull.a",
                  "usr/include/fpull/pull.h", libdir + "/slurm/fpull_spank.so",
                  "var/lib/fpull-slurm"):
            self.assertTrue(os.path.lexists(os.path.join(root, f)), f)
        self.demo_pull(root, libdir)
