"""fpull login / logout write docker's config.json, and pulls use what they wrote."""
import base64
import json
import os
import stat
import subprocess
import tempfile
import unittest

import fpull
import images
import pki
import registry

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

    def test_docker_hub_key_and_usage_errors(self):
        cp = fpull.run(["login", "-u", "bob", "--password-stdin", "docker.io"], env=self.env,
                       input="pw\n", check=0)
        with open(self.cfg) as f:
            self.assertIn("https://index.docker.io/v1/", json.load(f)["auths"])
        for args, stdin in ((["login", "--password-stdin", "r.io"], "pw\n"),
                            (["login", "-u", "bob", "r.io"], "pw\n"),
                            (["login", "-u", "bob", "--password-stdin", "r.io"], ""),
                            (["login", "-u", "bob", "--password-stdin", "Bad Host"], "pw\n")):
            cp = fpull.run(args, env=self.env, input=stdin)
            self.assertEqual(cp.returncode, 2, (args, cp.stderr))
            fpull.error_line(cp.stderr)

    def test_malformed_config_is_a_usage_error(self):
        os.makedirs(self.docker)
        with open(self.cfg, "w") as f:
            f.write("{not json")
        cp = self.login("b0b-Secret")
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertIn("config.json", fpull.error_line(cp.stderr))
        with open(self.cfg) as f:
            self.assertEqual(f.read(), "{not json")  # left as it was
