"""The first hour, round 2 (issue 43): what users of skopeo, crane, regctl, docker and cosign
trip over, typed as they type it: a plain-HTTP registry under a host name, flags given
values, other tools' option names and typos, regctl's two-word commands, --platform ARCH,
the no-fit message, and the small things."""
import base64
import fcntl
import json
import os
import re
import select
import struct
import subprocess
import tempfile
import termios
import time
import unittest

import cases
import faultproxy
import fpull
import images
import pki
import registry

NAME = "lab.fpull.test"


def layer(name):
    return [{"path": name, "type": "file", "data": name + "\n"}]


class PlainHttpByName(cases.RegistryCase):
    """Item 1: a plain-HTTP registry under a name that is not literally loopback."""
    tmp_prefix = "fpull-43-http-"

    def setUp(self):
        super().setUp()
        images.push_image(self.client, "lab/img", "v1", [layer("a")])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(self.proxy.stop)
        self.ref = "%s:%d/lab/img:v1" % (NAME, self.proxy.port)
        self.env = {"FPULL_RESOLVE": "%s:%d:127.0.0.1" % (NAME, self.proxy.port),
                    "FPULL_CACHE": os.path.join(self.tmp, "cache")}

    def test_said_at_once_with_the_way_to_allow_it(self):
        for argv in (["pull", self.ref, os.path.join(self.tmp, "r")],
                     ["inspect", self.ref], ["tags", self.ref.rsplit(":", 1)[0]]):
            self.proxy.clear()
            before = self.proxy.connections
            cp = fpull.run(argv, env=self.env)
            self.assertEqual(cp.returncode, 2, cp.stderr)
            line = fpull.error_line(cp.stderr)
            self.assertIn("%s:%d speaks plain HTTP, not HTTPS" % (NAME, self.proxy.port), line)
            self.assertIn("--insecure", line)
            self.assertIn("insecure-registries", line)
            self.assertNotRegex(line, r"\(\d+ tries\)")
            # One TLS handshake and one plain GET of /v2/ that tells it speaks HTTP: no
            # retries (five handshakes and 7 s before).
            self.assertEqual(self.proxy.connections - before, 2, argv)
            self.assertEqual([r["path"] for r in self.proxy.requests], ["/v2/"])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_insecure_and_the_config_allow_it(self):
        fpull.run(["pull", "-q", "--insecure", self.ref, os.path.join(self.tmp, "r1")],
                  env=self.env, check=0)
        cfg = os.path.join(self.tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write('insecure-registries: ["%s:%d"]\n' % (NAME, self.proxy.port))
        fpull.run(["pull", "-q", self.ref, os.path.join(self.tmp, "r2")],
                  env=dict(self.env, FPULL_CONFIG=cfg), check=0)
        # skopeo's spelling, and a flag's boolean value.
        fpull.run(["pull", "-q", "--tls-verify=false", self.ref, os.path.join(self.tmp, "r3")],
                  env=self.env, check=0)
        fpull.run(["pull", "-q", "--insecure=true", self.ref, os.path.join(self.tmp, "r4")],
                  env=self.env, check=0)
        for d in ("r1", "r2", "r3", "r4"):
            with open(os.path.join(self.tmp, d, "a")) as f:
                self.assertEqual(f.read(), "a\n")
        cp = fpull.run(["pull", "-q", "--insecure=false", self.ref, os.path.join(self.tmp, "r5")],
                       env=self.env)
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("speaks plain HTTP", cp.stderr)


class OptionWords(cases.RegistryCase):
    """Items 2 and 3: option errors say what fpull takes instead, never a raw byte."""
    tmp_prefix = "fpull-43-opts-"

    def setUp(self):
        super().setUp()
        self.img = images.push_image(self.client, "o/img", "v1", [layer("a")])
        self.ref = "%s/o/img:v1" % self.reg.hostport
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}

    def refused(self, argv, *needles):
        cp = fpull.run(argv, env=self.env, cwd=self.tmp)
        self.assertEqual(cp.returncode, 2, (argv, cp.stderr))
        line = fpull.error_line(cp.stderr)
        self.assertTrue(line.isprintable() and line.isascii(), repr(line))
        for n in needles:
            self.assertIn(n, line, argv)
        self.assertEqual(cp.stdout, "")
        return line

    def test_a_flag_given_a_value(self):
        for argv, opt in ((["pull", "--insecure=maybe", self.ref], "--insecure"),
                          (["inspect", "--json=yes please", self.ref], "--json"),
                          (["--help=x"], "--help"),
                          (["pull", "--force=2", self.ref], "--force")):
            self.refused(argv, "option %s takes no value" % opt)
        line = self.refused(["pull", "--verbose=2", self.ref], "option --verbose takes no value",
                            "-vv")
        self.assertNotIn("\\", line)
        # The boolean spellings skopeo's flags take.
        cp = fpull.run(["inspect", "--json=1", self.ref], env=self.env, check=0)
        self.assertIn(self.img["digest"], json.dumps(json.loads(cp.stdout)))
        cp = fpull.run(["digest", "--json=false", self.ref], env=self.env, check=0)
        self.assertEqual(cp.stdout.strip(), self.img["digest"])
        cp = fpull.run(["pull", "--help=true"], check=0)
        self.assertIn("Usage: fpull pull", cp.stdout)

    def test_typos_get_did_you_mean(self):
        self.refused(["pull", "--featurs", "haswell", self.ref], "unknown option --featurs",
                     "did you mean --features?")
        self.refused(["inspect", "--no-trunk", self.ref], "unknown option --no-trunk",
                     "did you mean --no-trunc?")
        self.refused(["pull", "--platfrom=linux/amd64", self.ref], "unknown option --platfrom",
                     "did you mean --platform?")

    def test_other_tools_option_names(self):
        cases_ = [
            (["inspect", "--format", "json", self.ref], "--json"),
            (["pull", "--format", "json", self.ref], "--json"),
            (["inspect", "--format={{json .}}", self.ref], "--json"),
            (["pull", "--tls-verify", self.ref], "--insecure"),
            (["pull", "--authfile", "/tmp/auth.json", self.ref], "REGISTRY_AUTH_FILE"),
            (["pull", "--src-creds", "u:p", self.ref], "--creds USER:PASSWORD"),
            # manifest takes --creds since issue 43.10; a command without registry access
            # does not.
            (["features", "--creds", "u:p"], "fpull login"),
            (["inspect", "--raw", self.ref], "fpull manifest inspect"),
            (["pull", "--override-arch", "arm64", self.ref], "--platform"),
            (["pull", "--override-os=linux", self.ref], "--platform"),
            (["pull", "-a", self.ref], "fpull tags REPOSITORY"),
            (["pull", "--all-tags", self.ref], "fpull tags REPOSITORY"),
        ]
        before = self.reg.log().count("/v2/o/img")
        for argv, instead in cases_:
            self.refused(argv, instead)
        self.assertEqual(self.reg.log().count("/v2/o/img"), before)
        self.assertEqual(os.listdir(self.tmp), ["cache"] if os.path.exists(
            os.path.join(self.tmp, "cache")) else [])

    def test_fpull_dash_V_blames_no_command(self):
        for argv in (["-V"], ["-V", self.ref], ["--featurs", "x", self.ref]):
            line = self.refused(argv)
            self.assertTrue(line.startswith("fpull: unknown option "), line)
            self.assertNotIn("fpull: pull:", line)
        self.refused(["-V"], "fpull --version")

    def test_regctl_and_crane_two_word_commands(self):
        before = self.reg.log().count("/v2/")
        for argv, instead in ((["image", "digest", self.ref], "'fpull digest IMAGE'"),
                              (["image", "ls"], "'fpull tags REPOSITORY'"),
                              (["image", "ls", self.ref], "'fpull tags REPOSITORY'"),
                              (["image", "inspect", self.ref], "'fpull inspect IMAGE'"),
                              (["image", "config", self.ref], "'fpull config IMAGE'"),
                              (["repo", "ls", self.reg.hostport], "'fpull tags REPOSITORY'")):
            line = self.refused(argv, "unknown command '%s %s'" % tuple(argv[:2]), instead,
                                "use 'fpull pull %s'" % argv[0])
            self.assertNotIn("(did you mean", line)
        self.assertEqual(self.reg.log().count("/v2/"), before)
        self.assertEqual(os.listdir(self.tmp), [])


class PlatformArchAlone(cases.RegistryCase):
    """Item 4: --platform ARCH is linux/ARCH, as docker and containerd parse it."""
    tmp_prefix = "fpull-43-plat-"

    def setUp(self):
        super().setUp()
        amd = images.push_image(self.client, "p/multi", None, [layer("amd64")])
        arm = images.push_image(self.client, "p/multi", None, [layer("arm64")],
                                architecture="arm64")
        images.push_index(self.client, "p/multi", "v1",
                          [(amd, {"os": "linux", "architecture": "amd64"}),
                           (arm, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        self.ref = "%s/p/multi:v1" % self.reg.hostport
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}

    def test_arch_alone(self):
        for plat, want in (("arm64", "arm64"), ("aarch64", "arm64"), ("amd64", "amd64"),
                           ("arm64:cortex-a72", "arm64")):
            dest = os.path.join(self.tmp, plat.replace(":", "_"))
            fpull.run(["pull", "-q", "--platform", plat, self.ref, dest], env=self.env, check=0)
            self.assertEqual(os.listdir(dest), [want], plat)
        cp, doc = fpull.run_json(["features", "--platform", "arm64"])
        self.assertEqual((doc["os"], doc["architecture"]), ("linux", "arm64"))

    def test_os_alone_and_typos_refused(self):
        for plat, needle in (("linux", "an os alone"), ("arm46", 'did you mean "arm64"')):
            cp = fpull.run(["pull", "--platform", plat, self.ref, os.path.join(self.tmp, "d")],
                           env=self.env)
            self.assertEqual(cp.returncode, 2, cp.stderr)
            self.assertIn(needle, fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "d")))


class NoFitNamesTheClosest(cases.RegistryCase):
    """Item 9: the no-fit error names the closest entry, one excluded by its variant too, and
    what the given features dropped of this host's own."""
    tmp_prefix = "fpull-43-fit-"

    def setUp(self):
        super().setUp()
        if os.uname().machine != "x86_64":
            self.skipTest("amd64 entries for the host's own architecture")
        # The host has haswell and x86-64-v3 whatever its CPU: FPULL_FEATURES adds them.
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache"),
                    "FPULL_FEATURES": "haswell"}

    def push(self, tag, *entries):
        imgs = []
        for i, plat in enumerate(entries):
            img = images.push_image(self.client, "f/img", None, [layer("e%d" % i)],
                                    architecture=plat["architecture"],
                                    variant=plat.get("variant"))
            imgs.append((img, dict(plat, os="linux")))
        images.push_index(self.client, "f/img", tag, imgs)
        return "%s/f/img:%s" % (self.reg.hostport, tag), [i[0]["digest"] for i in imgs]

    def no_fit(self, ref, *extra):
        cp = fpull.run(["pull"] + list(extra) + [ref, os.path.join(self.tmp, "d")],
                       env=self.env)
        self.assertEqual(cp.returncode, 3, cp.stderr)
        return fpull.error_line(cp.stderr)

    def test_an_entry_excluded_by_its_variant_is_the_closest(self):
        ref, (v3, arm) = self.push("v", {"architecture": "amd64", "variant": "v3"},
                                   {"architecture": "arm64"})
        line = self.no_fit(ref, "--features", "nvidia-535")
        self.assertIn("no entry of the index fits linux/amd64/v1; closest is %s, which needs "
                      "variant v3" % v3, line)
        self.assertIn("the given features replace this host's own, which have x86-64-v3: "
                      "give them too", line)
        # --platform's variant left it out: said so, and no features to give.
        line = self.no_fit(ref, "--platform", "linux/amd64/v2")
        self.assertIn("closest is %s, which needs variant v3; this host's own features have "
                      "x86-64-v3, which --platform left out" % v3, line)
        self.assertNotIn("given features", line)

    def test_the_features_the_replacement_dropped(self):
        ref, (hw, arm) = self.push("f", {"architecture": "amd64", "features": ["haswell"]},
                                   {"architecture": "arm64"})
        line = self.no_fit(ref, "--features", "nvidia-535")
        self.assertIn("closest is %s, which needs haswell; the given features replace this "
                      "host's own, which have haswell: give them too" % hw, line)
        # Given with them, it fits.
        fpull.run(["pull", "-q", "--features", "nvidia-535,haswell", ref,
                   os.path.join(self.tmp, "ok")], env=self.env, check=0)

    def test_one_entry_is_singular(self):
        ref, _ = self.push("one", {"architecture": "arm64"})
        line = self.no_fit(ref)
        self.assertIn("(1 entry)", line)
        self.assertNotIn("1 entries", line)


class SmallThings(cases.RegistryCase):
    """Item 11: the small things, each as a user meets it."""
    tmp_prefix = "fpull-43-small-"

    def test_help_tags_lists_only_what_tags_takes(self):
        cp = fpull.run(["help", "tags"], check=0)
        self.assertNotIn("--offline", cp.stdout)
        cp = fpull.run(["tags", "--offline", "%s/x/y" % self.reg.hostport])
        self.assertEqual(cp.returncode, 2, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("option --offline is not one of tags's", line)
        self.assertIn("the tag list is the registry's", line)

    def test_ctrl_c_line_starts_on_a_row_of_its_own(self):
        img = images.push_image(self.client, "i/big", "t", [
            [{"path": "big", "type": "file", "data": os.urandom(1000000)}]])
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(16384, 0.05))
        master, slave = os.openpty()
        self.addCleanup(os.close, master)

        def controlling_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        # As typed at a shell: the terminal is the pull's controlling terminal, and Ctrl-C is
        # the byte the terminal turns into SIGINT and echoes as "^C". -q: no bar to end.
        p = subprocess.Popen([fpull.binary(), "pull", "-q", "--cache-dir",
                              os.path.join(self.tmp, "c"), "%s/i/big:t" % proxy.hostport,
                              os.path.join(self.tmp, "r")],
                             stdin=slave, stdout=subprocess.PIPE, stderr=slave,
                             start_new_session=True, preexec_fn=controlling_terminal,
                             env=fpull.base_env())
        os.close(slave)
        end = time.time() + 30
        while not proxy.count(r"/blobs/sha256:%s" % img["layers"][0]["digest"][7:]) and \
                time.time() < end:
            time.sleep(0.05)
        time.sleep(0.2)
        os.write(master, b"\x03")
        self.assertEqual(p.wait(timeout=30), 130)
        shown = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            shown += data
        shown = shown.decode(errors="replace")
        self.assertIn("^C", shown)
        self.assertRegex(shown, r"\^C\r?\nfpull: interrupted \(SIGINT\)")
        p.stdout.close()

    def test_done_line_on_a_narrow_terminal_keeps_time_and_speed(self):
        images.push_image(self.client, "i/slow", "t", [
            [{"path": "big", "type": "file", "data": os.urandom(300000)}],
            [{"path": "small", "type": "file", "data": "s"}]])
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(32768, 0.02))
        master, slave = os.openpty()
        self.addCleanup(os.close, master)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        p = subprocess.Popen([fpull.binary(), "pull", "--cache-dir", os.path.join(self.tmp, "c"),
                              "%s/i/slow:t" % proxy.hostport, os.path.join(self.tmp, "r")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                             env=fpull.base_env({"COLUMNS": None}))
        os.close(slave)
        shown = b""
        end = time.time() + 60
        while time.time() < end:
            if not select.select([master], [], [], 0.2)[0]:
                if p.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            shown += data
        self.assertEqual(p.wait(timeout=30), 0, shown)
        plain = re.sub(r"\x1b\[[0-9]*[A-Za-z]", "", shown.decode(errors="replace"))
        done = [f for f in re.split(r"[\r\n]+", plain) if f.startswith("done:")]
        self.assertEqual(len(done), 1, plain)
        self.assertLessEqual(len(done[0]), 39, done[0])
        self.assertRegex(done[0], r"^done: \S+ [kM]?B( downloaded)? in \S+ \(\S+ [kM]?B/s\)$")

    def test_inspect_fits_80_columns_and_summarises_the_target(self):
        img = images.push_image(self.client, "a-rather-long-team-name/and-its-image", None,
                                [layer("a")])
        idx = images.push_index(self.client, "a-rather-long-team-name/and-its-image", "v1.2.3",
                                [(img, {"os": "linux", "architecture": "amd64",
                                        "features": ["skylake-avx512"]})])
        ref = "%s/a-rather-long-team-name/and-its-image:v1.2.3" % self.reg.hostport
        plat = "linux/amd64:skylake-avx512:nv-compute-9-0:nvidia-550-54-14:cuda-12-4"
        cp = fpull.run(["inspect", "--platform", plat, ref], env={"COLUMNS": "80"}, check=0)
        lines = cp.stdout.splitlines()
        for line in lines:
            self.assertLessEqual(len(line), 79, repr(line))
        self.assertEqual(lines[:2], [ref, "index: " + idx["digest"]])
        target = [l for l in lines if l.startswith("target: ")]
        self.assertEqual(len(target), 1, cp.stdout)
        self.assertRegex(target[0], r"^target: linux/amd64/v4 skylake-avx512,nvidia-550-54-14,"
                                    r"cuda-12-4 \+\d+ more \(-v\)$")
        self.assertTrue(lines[3].startswith("RANK "), cp.stdout)
        # -v lists them all, wrapped; a pipe without COLUMNS gets whole lines.
        cp = fpull.run(["inspect", "-v", "--platform", plat, ref], env={"COLUMNS": "80"},
                       check=0)
        self.assertIn("avx512f", cp.stdout)
        cp = fpull.run(["inspect", "--platform", plat, ref], env={"COLUMNS": None}, check=0)
        self.assertEqual(cp.stdout.splitlines()[0], "%s index %s" % (ref, idx["digest"]))

    def test_manifest_push_checks_every_entry_before_copying(self):
        images.push_image(self.client, "src/a", "1", [layer("a")])
        spec = os.path.join(self.tmp, "spec.yaml")
        with open(spec, "w") as f:
            f.write("image: %s/tgt/app:v1\nmanifests:\n"
                    "  - image: %s/src/a:1\n    platform: {os: linux, architecture: amd64}\n"
                    "  - image: %s/src/gone:1\n    platform: {os: linux, architecture: arm64}\n"
                    % ((self.reg.hostport,) * 3))
        cp = fpull.run(["manifest", "push", spec])
        self.assertEqual(cp.returncode, 5, cp.stderr)
        self.assertIn("src/gone:1", fpull.error_line(cp.stderr))
        self.assertNotIn("copying", cp.stderr)
        # Nothing was written into the target repository: no blob, no manifest.
        log = self.reg.log()
        self.assertIn("/v2/src/a/manifests/1", log)
        self.assertNotRegex(log, r"(PUT|POST|PATCH) /v2/tgt/app/")


class WrongCredentials(unittest.TestCase):
    """Item 11: a refused login names where the credentials came from."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-43-creds-")
        self.addCleanup(fpull.rmtree, self.tmp)
        ca = pki.CA(os.path.join(self.tmp, "pki"))
        cert, key = ca.issue("registry", ips=["127.0.0.1"])
        pw = os.path.join(self.tmp, "htpasswd")
        out = subprocess.run(["htpasswd", "-Bbn", "bob", "b0b-Secret"], check=True,
                             capture_output=True, text=True).stdout
        with open(pw, "w") as f:
            f.write(out)
        self.reg = registry.Registry(tls=(cert, key),
                                     auth={"htpasswd": {"realm": "t", "path": pw}}).start()
        self.addCleanup(self.reg.stop)
        self.ref = "%s/b/img:v1" % self.reg.hostport

    def test_the_source_is_named(self):
        auth = os.path.join(self.tmp, "auth.json")
        with open(auth, "w") as f:
            json.dump({"auths": {self.reg.hostport: {
                "auth": base64.b64encode(b"bob:stale").decode()}}}, f)
        cp = fpull.run(["pull", self.ref, os.path.join(self.tmp, "r")],
                       env={"REGISTRY_AUTH_FILE": auth})
        self.assertEqual(cp.returncode, 4, cp.stderr)
        self.assertIn("the credentials of bob came from %s" % auth, fpull.error_line(cp.stderr))
        cp = fpull.run(["pull", "--creds", "bob:typo", self.ref, os.path.join(self.tmp, "r")])
        self.assertEqual(cp.returncode, 4, cp.stderr)
        self.assertIn("the credentials of bob came from --creds", fpull.error_line(cp.stderr))
