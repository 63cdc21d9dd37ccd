"""What scripts/demo and scripts/test install (issue 25): the demo installs the build and
demo sets of scripts/deps.sh and nothing of the test suite's, every command the demo runs
comes from those packages, and installing the test set starts no daemon."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

SRC = os.environ["FPULL_SRC_DIR"]
DEPS = os.path.join(SRC, "scripts", "deps.sh")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Packages only the test suite needs: a demo that installs one of them costs a new user
# minutes, hundreds of MB, and (Slurm, munge) daemons left running.
TEST_ONLY = ("slurm-wlm", "slurmctld", "slurmd", "munge", "libslurm-dev", "qemu-user", "runc",
             "squashfuse", "fuse3", "gcc-aarch64-linux-gnu", "gcc-powerpc64le-linux-gnu",
             "libc6-dev-arm64-cross", "libc6-dev-ppc64el-cross", "umoci", "skopeo", "clang",
             "clang-format", "libclang-rt-14-dev", "squashfs-tools", "squashfs-tools-ng")
# Run by the demo's helpers rather than by the script itself (demo_index.py -> registry.py).
HELPER_COMMANDS = ("docker-registry", "python3")
SHELL_WORDS = {
    "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case",
    "esac", "function", "{", "}", "!", "[[", "]]", "time", "return", "local", "export",
    "unset", "set", "shift", "trap", "cd", "echo", "printf", "read", "exit", "kill", "wait",
    "source", ".", "[", "test", "true", "false", "declare", "eval", "exec", "break",
    "continue", "mapfile", "command", "type", "let"}


def bash(script, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=e,
                          cwd=SRC, timeout=60)


def deps_list(*sets):
    cp = subprocess.run(["bash", "-c", '. scripts/deps.sh && fpull_deps_list "$@"', "x"] +
                        list(sets), capture_output=True, text=True, cwd=SRC, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.split()


def would_install(script):
    """The packages a script asks deps.sh for, as it runs (it stops right there)."""
    cp = subprocess.run([os.path.join(SRC, "scripts", script)], capture_output=True,
                        text=True, env=dict(os.environ, FPULL_DEPS_PRINT="1"), timeout=60)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.split()


def commands_of(path):
    """The external commands a shell script runs: the first word of each simple command,
    less shell keywords and builtins, its own functions and deps.sh's, and variables."""
    with open(path) as f:
        text = f.read()
    with open(DEPS) as f:
        funcs = set(re.findall(r"^\s*([A-Za-z_]\w*)\s*\(\)", text + f.read(), re.M))
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    # Command substitutions, wherever they are (nested quotes too).
    cmds = set(re.findall(r"\$\(\s*([A-Za-z][\w.+-]*)", text))
    text = re.sub(r"'[^']*'", "''", text)  # python3 -c '...' bodies
    text = re.sub(r"\$\(\([^)]*\)\)", "0", text)
    # Of a double-quoted string only the commands it substitutes.
    text = re.sub(r'"((?:[^"$]|\$(?!\()|\$\([^()]*\))*)"',
                  lambda m: " ; ".join(re.findall(r"\$\(([^()]*)\)", m.group(1))) or '""',
                  text)
    for seg in re.split(r"\|\||&&|[|;&\n]|\$\(|[()`]", text):
        words = seg.split()
        while words and (re.match(r"^\w+=", words[0]) or words[0] in
                         ("then", "do", "else", "!", "{", "}", "if", "while", "until", "elif")):
            words = words[1:]
        if not words:
            continue
        w = words[0]
        if w in SHELL_WORDS or w in funcs or not re.match(r"^[A-Za-z][\w.+/-]*$", w):
            continue
        cmds.add(w)
    return {c for c in cmds if c not in SHELL_WORDS and c not in funcs}


def owner_package(cmd):
    path = shutil.which(cmd, path=SYSTEM_PATH)
    if not path:
        return None
    for p in (path, os.path.realpath(path), "/usr" + path, path.replace("/usr/", "/", 1)):
        cp = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        if cp.returncode == 0:
            return cp.stdout.split(":")[0].strip()
    return None


def depends(pkgs, levels=2):
    """pkgs and what they depend on (installed packages), levels deep."""
    seen = set(pkgs)
    for _ in range(levels):
        cp = subprocess.run(["dpkg-query", "-W", "-f=${Depends},${Pre-Depends}\n"] +
                            sorted(seen), capture_output=True, text=True)
        for name in re.findall(r"(?:^|[,|]\s*)([a-z0-9][a-z0-9+.-]+)", cp.stdout, re.M):
            seen.add(name)
    return seen


class Deps(unittest.TestCase):
    def test_demo_installs_the_build_and_demo_sets_and_nothing_of_the_tests(self):
        demo = would_install("demo")
        self.assertEqual(sorted(demo), sorted(deps_list("build", "demo")))
        self.assertEqual(sorted(deps_list("demo")), sorted(deps_list("build", "demo")))
        for p in ("cmake", "pkg-config", "build-essential", "libcurl4-openssl-dev",
                  "libsquashfs-dev", "docker-registry", "python3"):
            self.assertIn(p, demo)
        self.assertEqual([p for p in demo if p in TEST_ONLY], [])
        # The suite gets everything, the demo's set included.
        test = would_install("test")
        self.assertEqual(sorted(test), sorted(deps_list("test")))
        self.assertEqual([p for p in demo + list(TEST_ONLY) if p not in test], [])

    def test_every_command_the_demo_runs_comes_with_its_packages(self):
        if shutil.which("dpkg-query") is None:
            self.skipTest("not a Debian system")
        cmds = commands_of(os.path.join(SRC, "scripts", "demo")) | set(HELPER_COMMANDS)
        for c in ("cmake", "python3", "mktemp"):
            self.assertIn(c, cmds)  # the scan finds what it must
        allowed = depends(deps_list("demo"))
        for cmd in sorted(cmds):
            pkg = owner_package(cmd)
            self.assertIsNotNone(pkg, "%s: no package of this system has it" % cmd)
            cp = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", pkg],
                                capture_output=True, text=True)
            essential = cp.stdout.startswith("yes") or cp.stdout.endswith("required")
            self.assertTrue(pkg in allowed or essential,
                            "scripts/demo runs %s, from %s: not in the demo set" % (cmd, pkg))

    def test_unknown_set_is_refused(self):
        cp = bash(". scripts/deps.sh && fpull_deps_list tset")
        self.assertEqual(cp.returncode, 2)
        self.assertIn("unknown package set 'tset'", cp.stderr)


class InstallStartsNoDaemon(unittest.TestCase):
    """fpull_install_deps against stand-ins for dpkg-query, apt-get and systemctl."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-deps-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.bin = os.path.join(self.tmp, "bin")
        os.mkdir(self.bin)
        self.log = os.path.join(self.tmp, "log")
        self.policy = os.path.join(self.tmp, "policy-rc.d")
        stubs = {
            # Nothing is installed yet.
            "dpkg-query": "exit 1",
            # What a maintainer script asks: may the service start now?
            "apt-get": 'echo "apt-get $*" >>"$LOG"\n'
                       'if [ "$1" = install ]; then\n'
                       '  if [ -x "$POLICY" ]; then "$POLICY" slurmd start; '
                       'echo "policy-rc.d exit $?" >>"$LOG"; '
                       'else echo "no policy-rc.d" >>"$LOG"; fi\nfi',
            "systemctl": 'echo "systemctl $*" >>"$LOG"',
            "sudo": 'exec "$@"',
        }
        for name, body in stubs.items():
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(path, 0o755)

    def install(self, *sets):
        cp = subprocess.run(["bash", "-c", '. scripts/deps.sh && fpull_install_deps "$@"', "x"]
                            + list(sets), capture_output=True, text=True, cwd=SRC, timeout=60,
                            env=dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"],
                                     LOG=self.log, POLICY=self.policy,
                                     FPULL_POLICY_RC_D=self.policy))
        self.assertEqual(cp.returncode, 0, cp.stderr)
        with open(self.log) as f:
            return cp, f.read().splitlines()

    def test_services_neither_start_nor_stay_enabled(self):
        cp, log = self.install("test")
        self.assertIn("policy-rc.d exit 101", log)  # refused while apt-get ran
        self.assertFalse(os.path.exists(self.policy))  # and gone afterwards
        for unit in ("slurmd", "slurmctld", "munge"):
            self.assertIn("systemctl disable --now %s" % unit, log)
        installed = [l for l in log if l.startswith("apt-get install")][0].split()
        for p in TEST_ONLY:
            self.assertIn(p, installed)

    def test_demo_touches_no_service_and_an_admins_policy_stays(self):
        with open(self.policy, "w") as f:
            f.write("#!/bin/sh\n# the admin's\nexit 101\n")
        os.chmod(self.policy, 0o700)
        cp, log = self.install("build", "demo")
        with open(self.policy) as f:
            self.assertIn("the admin's", f.read())
        self.assertEqual(stat.S_IMODE(os.stat(self.policy).st_mode), 0o700)
        self.assertEqual([l for l in log if l.startswith("systemctl")], [])
        installed = [l for l in log if l.startswith("apt-get install")][0].split()
        self.assertEqual([p for p in installed if p in TEST_ONLY], [])
        self.assertIn("docker-registry", installed)


if __name__ == "__main__":
    unittest.main()
