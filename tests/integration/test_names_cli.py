"""Names a person gives (contract v3, issue 12 items 1, 2 and 9): a typo of a feature, os,
architecture, variant or command is exit 2 with "did you mean", never another image with
exit 0; help, version and the --help layout."""
import os
import re
import subprocess
import unittest

import cases
import fpull
import images

SRC = os.environ["FPULL_SRC_DIR"]

# The issue's examples: what a new user typed, the name refused and what was meant.
ISSUE_EXAMPLES = [
    (["--features", "brodwell"], "brodwell", "broadwell"),
    (["--features", "nvidia-396.44"], "nvidia-396.44", "nvidia-396-44"),
    (["--platform", "linux/amd64:skylak"], "skylak", "skylake"),
    (["--platform", "linux/amd64/v9"], "v9", None),
    (["--platform", "linux/amd46"], "amd46", "amd64"),
]


def osa_distance(a, b):
    """Edit distance with swaps of neighbours: the oracle for the suggestions."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def typos(name):
    """A deterministic sample of one- and two-edit typos of name."""
    n = len(name)
    out = []
    for p in sorted({0, n // 2, n - 1}):
        out.append(name[:p] + name[p + 1:])                                  # deletion
        out.append(name[:p] + ("z" if name[p] != "z" else "y") + name[p + 1:])  # substitution
        if p + 1 < n and name[p] != name[p + 1]:
            out.append(name[:p] + name[p + 1] + name[p] + name[p + 2:])     # swap
    out.append(name[:n // 2] + "q" + name[n // 2:])                          # insertion
    if n > 4:
        out.append(name[:-2] + "qz")                                         # two edits
    return out


def is_grammar(name):
    """Names fpull knows by their shape rather than from a list."""
    return bool(re.fullmatch(r"nvidia-\d+(-\d+){0,2}|nv-compute-\d+-\d+|cuda-\d+-\d+|"
                             r"amdgpu-gfx[0-9a-f]{3,5}", name))


class NamesOffline(unittest.TestCase):
    """What needs no registry: the target platform, commands, help and version."""

    def setUp(self):
        self.tmp = fpull.private_dir()

    def config(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def refused(self, args, named, near=None, env=None):
        cp = fpull.run(args, env=env)
        self.assertEqual(cp.returncode, 2, (args, cp.stdout, cp.stderr))
        line = fpull.error_line(cp.stderr)
        self.assertIn('"%s"' % named, line)
        if near:
            self.assertIn('did you mean "%s"' % near, line)
        else:
            self.assertNotIn("did you mean", line)
        return line

    def test_issue_examples_in_features(self):
        for args, named, near in ISSUE_EXAMPLES:
            self.refused(["features"] + args, named, near)
        line = self.refused(["features", "--platform", "linux/amd64/v9"], "v9")
        self.assertIn("v1, v2, v3, v4", line)
        # Case does not matter, and the real names are taken as they are.
        _, doc = fpull.run_json(["features", "--features", "BROADWELL,nvidia-396-44"])
        self.assertIn("broadwell", doc["features"])
        _, doc = fpull.run_json(["features", "--platform", "linux/amd64/v3:skylake"])
        self.assertEqual(doc["variant"], "v3")

    def test_environment_and_config_names(self):
        line = self.refused(["features"], "brodwell", "broadwell",
                            env={"FPULL_FEATURES": "haswell,brodwell"})
        self.assertIn("FPULL_FEATURES", line)
        cfg = self.config("typo.yaml", "platform-features: [skylak]\n")
        line = self.refused(["features", "--config", cfg], "skylak", "skylake")
        self.assertIn("typo.yaml", line)
        # A site's own names enter only through site-features.
        self.refused(["features", "--features", "infiniband"], "infiniband")
        cfg = self.config("site.yaml", "site-features: [InfiniBand, omnipath]\n"
                                       "platform-features: [infiniband]\n")
        _, doc = fpull.run_json(["features", "--config", cfg],
                                env={"FPULL_FEATURES": "omnipath"})
        self.assertEqual(doc["sources"]["infiniband"], "config")
        self.assertEqual(doc["sources"]["omnipath"], "config")
        _, doc = fpull.run_json(["features", "--config", cfg, "--features", "Omnipath,haswell"])
        self.assertIn("omnipath", doc["features"])
        self.refused(["features", "--config", cfg, "--features", "infinband"], "infinband",
                     "infiniband")
        cp = fpull.run(["features", "--config", cfg, "--list-known"], check=0)
        self.assertIn("infiniband", cp.stdout.split())

    def test_every_known_name_and_its_typos(self):
        """The property of issue 12's "Done when": every known feature name is accepted,
        and a 1-2-edit typo of one is exit 2 with a suggestion no farther from it than the
        name it came from, unless the typo is declared in site-features."""
        cp = fpull.run(["features", "--list-known"], check=0)
        known = cp.stdout.split()
        self.assertGreater(len(known), 250)
        self.assertEqual(known, sorted(set(known)))
        for must in ("broadwell", "skylake-avx512", "skylake512", "x86-64-v3", "znver4",
                     "neoverse-v1", "power9", "avx2", "avx512f"):
            self.assertIn(must, known)
        knownset = set(known)
        # Through the real command line, one run per name for every other name (rotating
        # over the kinds of edit) keeps this within the sanitizer run's time;
        # unit.test_names.every_known_name_and_its_typos runs every name with every kind.
        samples = []
        for i, name in enumerate(known):
            if i % 2:
                continue
            ts = [t for t in typos(name) if t and t not in knownset and not is_grammar(t)]
            if len(name) >= 3 and ts:
                samples.append((name, ts[(i // 2) % len(ts)]))
        self.assertGreater(len(samples), 125)
        cfgs = []
        for name, typo in samples:
            cp = fpull.run(["features", "--features", typo])
            self.assertEqual(cp.returncode, 2, (name, typo, cp.stdout, cp.stderr))
            line = fpull.error_line(cp.stderr)
            m = re.search(r'unknown feature "([^"]*)" \(did you mean "([^"]*)"\?\)', line)
            self.assertIsNotNone(m, (name, typo, line))
            self.assertEqual(m.group(1), typo)
            near = m.group(2)
            self.assertIn(near, knownset, line)
            self.assertLessEqual(osa_distance(typo, near), osa_distance(typo, name), line)
            if len(cfgs) < 8:
                cfgs.append(typo)
        # Declared in site-features, the same typos are accepted: the only way in.
        cfg = self.config("typos.yaml", "site-features: [%s]\n" % ", ".join(cfgs))
        _, doc = fpull.run_json(["features", "--config", cfg, "--features", ",".join(cfgs)])
        for t in cfgs:
            self.assertIn(t.lower(), doc["features"])

    def test_mistyped_command(self):
        for word, meant in (("inpsect", "inspect"), ("pul", "pull"), ("prefecth", "prefetch"),
                            ("featrues", "features"), ("verison", "version")):
            cp = fpull.run([word, "x"])
            self.assertEqual(cp.returncode, 2, (word, cp.stderr))
            line = fpull.error_line(cp.stderr)
            self.assertIn("unknown command '%s' (did you mean '%s'?)" % (word, meant), line)
            self.assertIn("fpull pull %s" % word, line)
            self.assertEqual(cp.stdout, "")
        cp = fpull.run(["manifest", "pshu", "spec.yaml"])
        self.assertEqual(cp.returncode, 2)
        self.assertIn("unknown subcommand 'pshu' (did you mean 'push'?)",
                      fpull.error_line(cp.stderr))
        # Other single words stay the "fpull IMAGE" shorthand: offline, not in the cache.
        cp = fpull.run(["ubuntu", "--offline"])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        cp = fpull.run(["pull", "--offline", "inpsect"])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("inpsect", fpull.error_line(cp.stderr))

    def test_help_command(self):
        for cmd in ("pull", "prefetch", "inspect", "features", "manifest", "version", "login"):
            want = fpull.run([cmd, "--help"], check=0)
            got = fpull.run(["help", cmd], check=0)
            self.assertEqual(got.stdout, want.stdout, cmd)
            self.assertIn("Usage: fpull %s" % cmd, got.stdout)
        self.assertEqual(fpull.run(["help"], check=0).stdout,
                         fpull.run(["--help"], check=0).stdout)
        cp = fpull.run(["help", "bogus"])
        self.assertEqual(cp.returncode, 2)
        self.assertIn("unknown command 'bogus'", fpull.error_line(cp.stderr))
        self.assertEqual(cp.stdout, "")
        cp = fpull.run(["help", "inspct"])
        self.assertEqual(cp.returncode, 2)
        self.assertIn("did you mean 'inspect'", fpull.error_line(cp.stderr))

    def test_help_rows_fit_their_columns(self):
        for cmd in ("pull", "prefetch", "inspect", "features", "manifest", "version", "login"):
            out = fpull.run([cmd, "--help"], check=0).stdout
            for line in out.splitlines():
                self.assertLessEqual(len(line), 80, "%s --help: %r" % (cmd, line))
            # Option text starts in one column, whatever the option's width.
            cols = {len(m.group(1)) for m in re.finditer(r"^(  (?:-.|    )[^\n]*?  +)\S",
                                                         out, re.M)}
            cols |= {len(m.group(1)) for m in re.finditer(r"^( {8,})\S", out, re.M)}
            self.assertEqual(len(cols), 1, (cmd, cols, out))
        out = fpull.run(["pull", "--help"], check=0).stdout
        self.assertIn("/etc/fpull/config.yaml", out)
        self.assertIn("~/.config/fpull/config.yaml", out)

    def test_version_names_revision_and_libraries(self):
        out = fpull.run(["version"], check=0).stdout
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^fpull \d+\.\d+\.\d+$")
        fields = dict(l.split(": ", 1) for l in lines[1:])
        for lib in ("libcurl", "OpenSSL", "libarchive", "cJSON", "libyaml", "libcpuid",
                    "zstd", "isal"):
            self.assertIn(lib, fields, out)
        for lib in ("libcurl", "OpenSSL", "libarchive", "cJSON", "libyaml", "zstd"):
            self.assertRegex(fields[lib], r"^\d+\.\d+", lib)
        # Built from a git checkout (as the suite is), the revision is named; from a
        # tarball there is none to name.
        try:
            described = subprocess.run(["git", "-C", SRC, "describe", "--always", "--tags"],
                                       capture_output=True, text=True).returncode == 0
        except OSError:
            described = False
        if described:
            self.assertIn("commit", fields, out)
            self.assertRegex(fields["commit"], r"^[0-9a-zA-Z._-]+$")
        self.assertEqual(fpull.run(["--version"], check=0).stdout, out)

    def test_unknown_config_key_did_you_mean(self):
        cfg = self.config("keys.yaml", "platform-feature: [haswell]\nsite-featurs: [x]\n"
                                       "zzzzzz: 1\n")
        cp = fpull.run(["features", "--config", cfg], check=0)
        warnings = [l for l in cp.stderr.splitlines() if l.startswith("fpull: warning: ")]
        self.assertEqual(len(warnings), 3, cp.stderr)
        self.assertIn('keys.yaml:1:1: unknown key "platform-feature" ignored (did you mean '
                      '"platform-features"?)', warnings[0])
        self.assertIn('(did you mean "site-features"?)', warnings[1])
        self.assertNotIn("did you mean", warnings[2])


class NamesWithRegistry(cases.RegistryCase):
    """The same refusals in commands that would reach a registry: nothing is downloaded,
    no DEST appears, and linux/amd46 is a usage error (2), not "no entry fits" (3)."""

    tmp_prefix = "fpull-names-"

    def setUp(self):
        super().setUp()
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}
        generic = images.push_image(self.client, "qnib/cv", "generic",
                                    [[{"path": "which", "data": "generic\n"}]])
        bdw = images.push_image(self.client, "qnib/cv", "bdw",
                                [[{"path": "which", "data": "broadwell\n"}]])
        images.push_index(self.client, "qnib/cv", "latest", [
            (generic, {"os": "linux", "architecture": "amd64"}),
            (bdw, {"os": "linux", "architecture": "amd64", "features": ["broadwell"]})])
        self.ref = "%s/qnib/cv:latest" % self.reg.hostport

    def requests(self):
        return self.reg.log().count("/v2/")

    def test_issue_examples_pull_nothing(self):
        before = self.requests()
        for cmd in ("pull", "inspect", "prefetch"):
            for args, named, near in ISSUE_EXAMPLES:
                dest = os.path.join(self.tmp, "out")
                argv = [cmd] + args + [self.ref] + ([dest] if cmd == "pull" else [])
                cp = fpull.run(argv, env=self.env, cwd=self.tmp)
                self.assertEqual(cp.returncode, 2, (argv, cp.stderr))
                line = fpull.error_line(cp.stderr)
                self.assertIn('"%s"' % named, line)
                if near:
                    self.assertIn('did you mean "%s"' % near, line)
                self.assertFalse(os.path.lexists(dest))
        self.assertEqual(self.requests(), before, "a refused name must not reach the registry")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "cache", "blobs")))
        # The names as meant choose as they should.
        dest = os.path.join(self.tmp, "bdw")
        fpull.run(["pull", "--features", "broadwell", self.ref, dest], env=self.env, check=0)
        with open(os.path.join(dest, "which")) as f:
            self.assertEqual(f.read(), "broadwell\n")

    def test_mistyped_command_touches_no_registry(self):
        before = self.requests()
        cp = fpull.run(["inpsect", self.ref.split("/", 1)[1]], env=self.env)
        self.assertEqual(cp.returncode, 2)
        self.assertEqual(self.requests(), before)

    def test_staging_error_names_the_directory(self):
        parent = os.path.join(self.tmp, "locked")
        os.mkdir(parent)
        if os.geteuid() == 0:
            # Root writes through modes; the immutable flag stops it.
            r = subprocess.run(["chattr", "+i", parent], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, "chattr +i: %s" % r.stderr)
            self.addCleanup(subprocess.run, ["chattr", "-i", parent])
        else:
            os.chmod(parent, 0o555)
            self.addCleanup(os.chmod, parent, 0o755)
        cp = fpull.run(["pull", self.ref, os.path.join(parent, "rootfs")], env=self.env)
        self.assertEqual(cp.returncode, 1, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("cannot create a staging directory for rootfs in %s: " % parent, line)


if __name__ == "__main__":
    unittest.main()
