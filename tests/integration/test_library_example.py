"""The library example (issue 34.8): examples/pull.c, the same program as fpull(1)'s
LIBRARY section, built against a staged install with pkg-config (fpull.pc: libfpull.so;
fpull-static.pc: libfpull.a) and with CMake (fpull::fpull, fpull::fpull_static), each run
against the real registry: it pulls the entry fpull pull chooses, into the CLI's default
cache when cache_dir is unset."""
import glob
import os
import re
import subprocess

import cases
import fpull
import images

FILES = [{"path": "etc/hello", "type": "file", "data": "from the example\n"}]


def man_example():
    """The C program of the LIBRARY section, unescaped."""
    with open(os.path.join(fpull.SRC_DIR, "man", "fpull.1")) as f:
        text = f.read()
    m = re.search(r"\.EX\n(#include <stdio\.h>\n.*?)\.EE\n", text, re.S)
    return m.group(1).replace("\\e", "\\") if m else None


class LibraryExample(cases.RegistryCase):
    tmp_prefix = "fpull-libex-"
    tools = ("cc", "pkg-config", "cmake", "ldd")

    def setUp(self):
        super().setUp()
        self.stage = os.path.join(self.tmp, "stage")
        build = os.environ.get("FPULL_BUILD_DIR") or os.path.join(fpull.SRC_DIR, "build")
        # A sanitized libfpull needs the sanitizer runtime in the program too.
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            sanitized = "FPULL_SANITIZE:BOOL=ON" in f.read()
        self.san = ["-fsanitize=address,undefined"] if sanitized else []
        subprocess.run(["cmake", "--install", build], env=dict(os.environ, DESTDIR=self.stage),
                       check=True, capture_output=True)
        pcs = glob.glob(os.path.join(self.stage, "**", "pkgconfig", "fpull.pc"), recursive=True)
        self.assertEqual(len(pcs), 1, pcs)
        self.pcdir = os.path.dirname(pcs[0])
        self.libdir = os.path.dirname(self.pcdir)
        self.img = images.push_image(self.client, "lib/ex", "v1", [FILES])
        self.ref = "%s/lib/ex:v1" % self.reg.hostport
        self.example = os.path.join(fpull.SRC_DIR, "examples", "pull.c")

    def pkg(self, *args):
        return subprocess.run(["pkg-config"] + list(args), env=dict(
            os.environ, PKG_CONFIG_PATH=self.pcdir), check=True, capture_output=True,
            text=True).stdout.split()

    def cc(self, out, *flags):
        cp = subprocess.run(["cc"] + self.san + ["-o", out, self.example] + list(flags),
                            capture_output=True, text=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        return out

    def uses_shared(self, exe):
        return "libfpull.so" in subprocess.run(["ldd", exe], capture_output=True,
                                               text=True).stdout

    def run_example(self, exe, dest):
        home = os.path.join(self.tmp, "home")
        env = fpull.base_env({"HOME": home, "XDG_CACHE_HOME": None, "FPULL_CACHE": None})
        cp = subprocess.run([exe, self.ref, os.path.join(self.tmp, dest)], env=env,
                            capture_output=True, text=True, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout, "%s %s 1\n" % (self.ref, self.img["digest"]))
        with open(os.path.join(self.tmp, dest, "etc/hello")) as f:
            self.assertEqual(f.read(), "from the example\n")
        # cache_dir unset: the CLI's default cache under HOME.
        self.assertTrue(os.path.isdir(os.path.join(home, ".cache", "fpull")))

    def test_man_page_shows_the_example(self):
        with open(self.example) as f:
            code = f.read()
        shown = man_example()
        self.assertIsNotNone(shown)
        self.assertEqual(shown, code[code.index("#include <stdio.h>"):])

    def test_pkg_config_shared_and_static(self):
        shared = self.cc(os.path.join(self.tmp, "pull_shared"), *(
            self.pkg("--cflags", "--libs", "fpull") + ["-Wl,-rpath," + self.libdir]))
        self.assertTrue(self.uses_shared(shared))
        self.run_example(shared, "r1")
        static = self.cc(os.path.join(self.tmp, "pull_static"),
                         *self.pkg("--cflags", "--libs", "fpull-static"))
        self.assertFalse(self.uses_shared(static))
        self.run_example(static, "r2")

    def test_cmake_shared_and_static(self):
        b = os.path.join(self.tmp, "cmake")
        prefix = os.path.dirname(self.libdir)
        cp = subprocess.run(["cmake", "-S", os.path.dirname(self.example), "-B", b,
                             "-DCMAKE_PREFIX_PATH=" + prefix,
                             "-DCMAKE_BUILD_RPATH=" + self.libdir,
                             "-DCMAKE_C_FLAGS=" + " ".join(self.san),
                             "-DCMAKE_EXE_LINKER_FLAGS=" + " ".join(self.san)],
                            capture_output=True, text=True)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        cp = subprocess.run(["cmake", "--build", b], capture_output=True, text=True)
        self.assertEqual(cp.returncode, 0, cp.stdout + cp.stderr)
        self.assertTrue(self.uses_shared(os.path.join(b, "pull_shared")))
        self.assertFalse(self.uses_shared(os.path.join(b, "pull_static")))
        self.run_example(os.path.join(b, "pull_shared"), "r3")
        self.run_example(os.path.join(b, "pull_static"), "r4")
