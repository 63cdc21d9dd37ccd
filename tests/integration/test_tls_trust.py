"""A registry whose certificate is not trusted (issue 34.4): its own message (the host, what
failed, where fpull looked: certs.d, --certs-dir, --cert-dir, SSL_CERT_FILE/SSL_CERT_DIR,
--insecure last), still exit 6; SSL_CERT_FILE, SSL_CERT_DIR and skopeo's --cert-dir (the
registry's own folder) are honoured. Against the real registry serving the test PKI's
certificate under a name that is not literally loopback."""
import os
import shutil
import subprocess
import tempfile
import unittest

import cases
import fpull
import images
import pki
import registry

FILES = [{"path": "etc/x", "type": "file", "data": "x\n"}]
NAME = "registry.fpull.test"


class TLSTrust(unittest.TestCase):
    def setUp(self):
        cases.require_tools(self, "openssl")
        self.tmp = tempfile.mkdtemp(prefix="fpull-tls-")
        self.addCleanup(fpull.rmtree, self.tmp)
        self.ca = pki.CA(os.path.join(self.tmp, "pki"))
        cert, key = self.ca.issue("registry", ips=["127.0.0.1"], dns=[NAME])
        self.reg = registry.Registry(tls=(cert, key)).start()
        self.addCleanup(self.reg.stop)
        client = images.Client(self.reg.url, cafile=self.ca.cert)
        self.img = images.push_image(client, "t/img", "v1", [FILES])
        self.named = "%s:%d" % (NAME, self.reg.port)
        self.ref = self.named + "/t/img:v1"
        self.env = {"FPULL_RESOLVE": "%s:%d:127.0.0.1" % (NAME, self.reg.port),
                    "SSL_CERT_FILE": None, "SSL_CERT_DIR": None}

    def pull(self, *extra, env=None, check=0):
        e = dict(self.env)
        e.update(env or {})
        dest = os.path.join(self.tmp, "out-%d" % len(os.listdir(self.tmp)))
        return fpull.run(["pull", "-q", "--cache-dir", os.path.join(self.tmp, "cache")] +
                         list(extra) + [self.ref, dest], env=e, check=check)

    def test_untrusted_certificate_says_where_fpull_looked(self):
        certs = os.path.join(self.tmp, "certs.d")
        os.mkdir(certs)
        cp = self.pull("--certs-dir", certs, check=6)
        line = fpull.error_line(cp.stderr)
        self.assertIn("TLS: the certificate of %s is not trusted" % self.named, line)
        self.assertNotIn("cannot reach", line)
        self.assertIn("certificate", line.split("not trusted (")[1])  # curl's own words
        self.assertIn("--certs-dir %s/%s" % (certs, self.named), line)
        self.assertIn("/etc/docker/certs.d/" + self.named, line)
        self.assertIn("containers/certs.d/" + self.named, line)
        self.assertIn("--insecure as the last resort", line)
        self.assertTrue(line.endswith("--insecure as the last resort"), line)
        # SSL_CERT_FILE and SSL_CERT_DIR, when set, are named among the places.
        cp = self.pull(env={"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
                            "SSL_CERT_DIR": "/etc/ssl/certs"}, check=6)
        line = fpull.error_line(cp.stderr)
        self.assertIn("SSL_CERT_FILE /etc/ssl/certs/ca-certificates.crt", line)
        self.assertIn("SSL_CERT_DIR /etc/ssl/certs", line)

    def test_ssl_cert_file_is_honoured(self):
        self.pull(env={"SSL_CERT_FILE": self.ca.cert})

    def test_ssl_cert_dir_is_honoured(self):
        d = os.path.join(self.tmp, "hashed")
        os.mkdir(d)
        shutil.copy(self.ca.cert, os.path.join(d, "ca.pem"))
        subprocess.run(["openssl", "rehash", d], check=True, capture_output=True)
        self.pull(env={"SSL_CERT_DIR": d})

    def test_cert_dir_is_the_registrys_own_folder(self):
        own = os.path.join(self.tmp, "own")
        os.mkdir(own)
        shutil.copy(self.ca.cert, os.path.join(own, "ca.crt"))
        self.pull("--cert-dir", own)
        # The same folder as --certs-dir is a root of HOST:PORT folders: not found there.
        cp = self.pull("--certs-dir", own, check=6)
        self.assertIn("--certs-dir %s/%s" % (own, self.named), fpull.error_line(cp.stderr))
        cp = self.pull("--cert-dir", os.path.join(self.tmp, "nope"), check=2)
        self.assertIn("--cert-dir", fpull.error_line(cp.stderr))
        # inspect and digest take it too.
        cp = fpull.run(["digest", "--cert-dir", own, self.ref], env=self.env, check=0)
        self.assertEqual(cp.stdout.strip(), self.img["digest"])


def htpasswd(path, user, password):
    out = subprocess.run(["htpasswd", "-Bbn", user, password], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    with open(path, "w") as f:
        f.write(out)


class CredsOption(unittest.TestCase):
    """--creds USER:PASS (skopeo's and podman's) for a registry that wants a password
    (issue 34.10), instead of the auth files; never shown."""

    def setUp(self):
        cases.require_tools(self, "openssl", "htpasswd")
        self.tmp = tempfile.mkdtemp(prefix="fpull-creds-")
        self.addCleanup(fpull.rmtree, self.tmp)
        self.ca = pki.CA(os.path.join(self.tmp, "pki"))
        cert, key = self.ca.issue("registry", ips=["127.0.0.1"], dns=[NAME])
        pw = os.path.join(self.tmp, "htpasswd")
        htpasswd(pw, "bob", "b0b-Secret")
        self.reg = registry.Registry(
            tls=(cert, key), auth={"htpasswd": {"realm": "fpull-test", "path": pw}}).start()
        self.addCleanup(self.reg.stop)
        client = images.Client(self.reg.url, username="bob", password="b0b-Secret",
                               cafile=self.ca.cert)
        self.img = images.push_image(client, "c/img", "v1", [FILES])
        self.ref = "%s:%d/c/img:v1" % (NAME, self.reg.port)
        self.env = {"FPULL_RESOLVE": "%s:%d:127.0.0.1" % (NAME, self.reg.port),
                    "SSL_CERT_FILE": self.ca.cert}

    def pull(self, *extra, check=0):
        dest = os.path.join(self.tmp, "out-%d" % len(os.listdir(self.tmp)))
        return fpull.run(["pull", "-q", "--cache-dir", os.path.join(self.tmp, "cache")] +
                         list(extra) + [self.ref, dest], env=self.env, check=check)

    def test_creds_user_pass(self):
        cp = self.pull(check=4)
        self.assertIn("no credentials found", fpull.error_line(cp.stderr))
        self.pull("--creds", "bob:b0b-Secret")
        cp = self.pull("--creds", "bob:wrong-Secret", check=4)
        self.assertNotIn("wrong-Secret", cp.stderr)
        cp = fpull.run(["digest", "--creds", "bob:b0b-Secret", self.ref], env=self.env,
                       check=0)
        self.assertEqual(cp.stdout.strip(), self.img["digest"])
        cp = self.pull("--creds", "bob", check=2)
        self.assertIn("--creds takes USER:PASSWORD", fpull.error_line(cp.stderr))
