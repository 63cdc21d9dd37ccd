"""fpull login / logout write docker's config.json, and pulls use what they wrote."""
import base64
import json
import os
import pty
import select
import signal
import stat
import subprocess
import termios
import tempfile
import unittest

import fpull
import images
import pki
import registry
import tokenserver

LAYER = [{"path": "etc/motd", "type": "file", "data": "hello\n"}]


class Login(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-login-")
        self.addCleanup(fpull.rmtree, self.tmp)
        ca = pki.CA(os.path.join(self.tmp, "pki"))
        cert, key = ca.issue("registry", ips=["127.0.0.1"])
        pw = os.path.join(self.tmp, "htpasswd")
        out = subprocess.run(["htpasswd", "-Bbn", "bob", "b0b-Secret"], check=True,
                             capture_output=True, text=True).stdout
        with open(pw, "w") as f:
            f.write(out)
        self.reg = registry.Registry(tls=(cert, key),
                                     auth={"htpasswd": {"realm": "t", "path": pw}})
        self.reg.start()
        self.addCleanup(self.reg.stop)
        c = images.Client(self.reg.url, username="bob", password="b0b-Secret", cafile=ca.cert)
        images.push_image(c, "b/img", "v1", [LAYER])
        self.docker = os.path.join(self.tmp, "docker")
        self.env = {"DOCKER_CONFIG": self.docker}
        self.cfg = os.path.join(self.docker, "config.json")

    def login(self, password, *extra):
        return fpull.run(["login", "-u", "bob", "--password-stdin", self.reg.hostport] +
                         list(extra), env=self.env, input=password + "\n")

    def pull(self):
        return fpull.run(["pull", "-q", "--cache-dir", os.path.join(self.tmp, "c"),
                          "--force", "%s/b/img:v1" % self.reg.hostport,
                          os.path.join(self.tmp, "root")], env=self.env)

    def test_login_then_pull_then_logout(self):
        self.assertEqual(self.pull().returncode, 4)
        cp = self.login("b0b-Secret")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertNotIn("b0b-Secret", cp.stdout + cp.stderr)
        st = os.stat(self.cfg)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        with open(self.cfg) as f:
            doc = json.load(f)
        auth = doc["auths"][self.reg.hostport]["auth"]
        self.assertEqual(base64.b64decode(auth).decode(), "bob:b0b-Secret")
        cp = self.pull()
        self.assertEqual(cp.returncode, 0, cp.stderr)
        cp = fpull.run(["logout", self.reg.hostport], env=self.env, check=0)
        self.assertIn("Removed", cp.stderr)
        with open(self.cfg) as f:
            self.assertNotIn(self.reg.hostport, json.load(f)["auths"])
        self.assertEqual(self.pull().returncode, 4)
        cp = fpull.run(["logout", self.reg.hostport], env=self.env, check=0)
        self.assertIn("Not logged in", cp.stderr)

    def test_login_keeps_the_rest_of_the_file(self):
        os.makedirs(self.docker)
        with open(self.cfg, "w") as f:
            json.dump({"auths": {"other.example:5000": {"auth": "eDp5"}},
                       "credHelpers": {"gcr.io": "gcloud"}, "psFormat": "table"}, f)
        self.assertEqual(self.login("b0b-Secret").returncode, 0)
        with open(self.cfg) as f:
            doc = json.load(f)
        self.assertEqual(doc["credHelpers"], {"gcr.io": "gcloud"})
        self.assertEqual(doc["psFormat"], "table")
        self.assertEqual(doc["auths"]["other.example:5000"], {"auth": "eDp5"})
        self.assertIn(self.reg.hostport, doc["auths"])

    def test_usage_errors(self):
        # (Docker Hub's key, https://index.docker.io/v1/, is checked by the unit test
        # login_save_docker_hub_key: a login to docker.io now asks docker.io first.)
        for args, stdin in ((["login", "--password-stdin", "r.io"], "pw\n"),
                            (["login", "-u", "bob", "r.io"], "pw\n"),
                            (["login", "r.io"], "bob\npw\n"),
                            (["login", "-u", "bob", "--password-stdin", "r.io"], ""),
                            (["login", "-u", "bob", "-p", "pw", "--password-stdin", "r.io"],
                             "pw\n"),
                            (["login", "-u", "bob", "--password-stdin", "Bad Host"], "pw\n")):
            cp = fpull.run(args, env=self.env, input=stdin)
            self.assertEqual(cp.returncode, 2, (args, cp.stderr))
            fpull.error_line(cp.stderr)
        self.assertFalse(os.path.exists(self.cfg))

    def test_refused_login_stores_nothing(self):
        # Issue 23: a wrong password was stored and reported as a success (exit 0).
        cp = self.login("wrong-Pa55word")
        self.assertEqual(cp.returncode, 4, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("login to %s refused for bob" % self.reg.hostport, line)
        self.assertNotIn("wrong-Pa55word", cp.stdout + cp.stderr)
        self.assertFalse(os.path.exists(self.cfg))
        self.assertFalse(os.path.exists(self.docker))
        # Over a good login, a refused one changes nothing either.
        self.assertEqual(self.login("b0b-Secret").returncode, 0)
        with open(self.cfg, "rb") as f:
            before = f.read()
        self.assertEqual(self.login("wrong-Pa55word").returncode, 4)
        with open(self.cfg, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.docker)), ["config.json"])
        self.assertEqual(self.pull().returncode, 0)
        # An unknown user likewise.
        cp = fpull.run(["login", "-u", "mallory", "--password-stdin", self.reg.hostport],
                       env=self.env, input="b0b-Secret\n")
        self.assertEqual(cp.returncode, 4, cp.stderr)
        with open(self.cfg, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_password_option_warns(self):
        cp = fpull.run(["login", "-u", "bob", "-p", "b0b-Secret", self.reg.hostport],
                       env=self.env)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("fpull: warning: a password on the command line", cp.stderr)
        self.assertNotIn("b0b-Secret", cp.stdout + cp.stderr)
        with open(self.cfg) as f:
            auth = json.load(f)["auths"][self.reg.hostport]["auth"]
        self.assertEqual(base64.b64decode(auth).decode(), "bob:b0b-Secret")
        cp = fpull.run(["login", "-u", "bob", "-p", "nope", self.reg.hostport], env=self.env)
        self.assertEqual(cp.returncode, 4, cp.stderr)

    def pty_login(self, args, answers):
        """Runs fpull ARGS on a new terminal, answering each prompt (what the terminal
        shows last) in turn; returns (exit code, everything the terminal showed)."""
        master, slave = pty.openpty()
        proc = subprocess.Popen([fpull.binary()] + args, stdin=slave, stdout=slave,
                                stderr=slave, env=fpull.base_env(self.env), close_fds=True)
        os.close(slave)
        shown = b""
        pending = list(answers)
        while True:
            if pending and shown.endswith(pending[0][0]):
                prompt, answer = pending.pop(0)
                os.write(master, answer + b"\n")
                shown += b"<answered>"
                continue
            r, _, _ = select.select([master], [], [], 60)
            if not r:
                proc.kill()
                raise AssertionError("fpull login shows nothing more; so far %r" % shown)
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: fpull is gone and the terminal closed
                chunk = b""
            if not chunk:
                break
            shown += chunk
        rc = proc.wait(timeout=60)
        os.close(master)
        return rc, shown.decode("utf-8", "replace")

    def test_prompts_for_the_password_without_echo(self):
        rc, shown = self.pty_login(["login", "-u", "bob", self.reg.hostport],
                                   [(b"Password: ", b"b0b-Secret")])
        self.assertEqual(rc, 0, shown)
        self.assertNotIn("b0b-Secret", shown)
        self.assertIn("Login Succeeded", shown)
        with open(self.cfg) as f:
            auth = json.load(f)["auths"][self.reg.hostport]["auth"]
        self.assertEqual(base64.b64decode(auth).decode(), "bob:b0b-Secret")
        # Without -u, the user name is asked too, and shown as typed.
        os.unlink(self.cfg)
        rc, shown = self.pty_login(["login", self.reg.hostport],
                                   [(b"Username: ", b"bob"), (b"Password: ", b"wrong-Pa55word")])
        self.assertEqual(rc, 4, shown)
        self.assertIn("<answered>bob", shown)
        self.assertNotIn("wrong-Pa55word", shown)
        self.assertIn("fpull: login to %s refused for bob" % self.reg.hostport, shown)
        self.assertFalse(os.path.exists(self.cfg))

    def test_echo_is_back_after_an_interrupted_prompt(self):
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)
        proc = subprocess.Popen([fpull.binary(), "login", "-u", "bob", self.reg.hostport],
                                stdin=slave, stdout=slave, stderr=slave,
                                env=fpull.base_env(self.env))
        shown = b""
        while not shown.endswith(b"Password: "):
            r, _, _ = select.select([master], [], [], 60)
            if not r:
                proc.kill()
                self.fail("no prompt; so far %r" % shown)
            shown += os.read(master, 4096)
        # While it asks, the terminal does not echo; an interrupt puts echo back.
        self.assertFalse(termios.tcgetattr(slave)[3] & termios.ECHO)
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(timeout=60), -signal.SIGINT)
        self.assertTrue(termios.tcgetattr(slave)[3] & termios.ECHO)
        self.assertFalse(os.path.exists(self.cfg))

    def test_malformed_config_is_a_usage_error(self):
        os.makedirs(self.docker)
        with open(self.cfg, "w") as f:
            f.write("{not json")
        cp = self.login("b0b-Secret")
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("config.json", fpull.error_line(cp.stderr))
        with open(self.cfg) as f:
            self.assertEqual(f.read(), "{not json")  # left as it was


class TokenLogin(unittest.TestCase):
    """login against a registry whose token server checks the credentials (as Docker
    Hub's does): a token for no scope, with the credentials, then /v2/ with it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fpull-login-")
        self.addCleanup(fpull.rmtree, self.tmp)
        self.ts = tokenserver.TokenServer(users={"alice": "s3cret-pw"}).start()
        self.addCleanup(self.ts.stop)
        self.reg = registry.Registry(auth=self.ts.registry_auth()).start()
        self.addCleanup(self.reg.stop)
        self.env = {"DOCKER_CONFIG": os.path.join(self.tmp, "docker")}
        self.cfg = os.path.join(self.tmp, "docker", "config.json")

    def login(self, password):
        return fpull.run(["login", "-u", "alice", "--password-stdin", self.reg.hostport],
                         env=self.env, input=password + "\n")

    def test_token_server_decides(self):
        self.ts.requests.clear()
        cp = self.login("wrong-pw")
        self.assertEqual(cp.returncode, 4, cp.stderr)
        line = fpull.error_line(cp.stderr)
        self.assertIn("login to %s refused for alice: token server" % self.reg.hostport, line)
        self.assertFalse(os.path.exists(self.cfg))
        self.assertEqual([q["user"] for q in self.ts.requests], [None])
        self.assertTrue(self.ts.requests[-1]["authorization"].startswith("Basic "))
        self.ts.requests.clear()
        cp = self.login("s3cret-pw")
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual([q["user"] for q in self.ts.requests], ["alice"])
        self.assertEqual(self.ts.requests[0]["scopes"], [])
        with open(self.cfg) as f:
            auth = json.load(f)["auths"][self.reg.hostport]["auth"]
        self.assertEqual(base64.b64decode(auth).decode(), "alice:s3cret-pw")
