"""Registry authentication against the real registry: anonymous and credentialed Bearer
tokens (a test token server), Basic over TLS with certs.d, wrong credentials, credential
helpers, hostile token answers, and no password in any output (issues 2, 5, 6)."""
import base64
import os
import subprocess
import unittest

import cases
import faultproxy
import fpull
import images
import pki
import regget
import registry
import tokenserver

LAYER = [{"path": "etc/hostname", "data": "auth\n"}]


def htpasswd(path, user, password):
    out = subprocess.run(["htpasswd", "-Bbn", user, password], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    with open(path, "w") as f:
        f.write(out)


class TokenAuth(unittest.TestCase):
    def setUp(self):
        self.env = regget.Env()
        self.ts = tokenserver.TokenServer(users={"alice": "s3cret-pw"},
                                          anonymous_pull=True).start()
        self.reg = registry.Registry(auth=self.ts.registry_auth()).start()
        client = images.Client(self.reg.url, username="alice", password="s3cret-pw")
        self.img = images.push_image(client, "team/app", "v1", [LAYER])
        self.ts.requests.clear()

    def tearDown(self):
        self.reg.stop()
        self.ts.stop()
        self.env.cleanup()

    def test_anonymous_token(self):
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])
        self.assertTrue(self.ts.requests)
        self.assertEqual(self.ts.requests[0]["user"], None)
        self.assertEqual(self.ts.requests[0]["authorization"], "")
        self.assertEqual(self.ts.requests[0]["scopes"], ["repository:team/app:pull"])
        self.assertEqual(self.ts.requests[0]["query"]["service"], ["fpull-test"])

    def test_credentialed_token_and_blob(self):
        self.env.login(self.reg.hostport, "alice", "s3cret-pw")
        out = os.path.join(self.env.dir, "blob")
        d = self.img["layers"][0]["digest"]
        r = self.env.run("blob", self.reg.hostport, "team/app", d, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(int(regget.fields(r.stdout)["bytes"]), self.img["layers"][0]["size"])
        self.assertEqual([q["user"] for q in self.ts.requests], ["alice"])

    def test_access_token_field(self):
        self.ts.field = "access_token"
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_wrong_credentials_exit_4_without_password(self):
        self.env.login(self.reg.hostport, "alice", "wrong-Pa55word")
        r = self.env.run("-v", "manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        last = r.stderr.strip().splitlines()[-1]
        self.assertIn("authentication refused by %s for team/app" % self.reg.hostport, last)
        self.assertNotIn("wrong-Pa55word", r.stderr + r.stdout)
        b64 = base64.b64encode(b"alice:wrong-Pa55word").decode()
        self.assertNotIn(b64, r.stderr + r.stdout)

    def test_no_pull_rights_exit_4(self):
        self.ts.anonymous_pull = False
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("authentication refused by %s for team/app" % self.reg.hostport, r.stderr)

    def test_unknown_tag_exit_5(self):
        r = self.env.run("manifest", self.reg.hostport, "team/app", "nope")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("MANIFEST_UNKNOWN", r.stderr)
        r = self.env.run("manifest", self.reg.hostport, "team/none", "v1")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("not found in %s/team/none" % self.reg.hostport, r.stderr)
        out = os.path.join(self.env.dir, "blob")
        r = self.env.run("blob", self.reg.hostport, "team/app", "sha256:" + "0" * 64, out)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("BLOB_UNKNOWN", r.stderr)

    def test_credential_helper(self):
        helper = os.path.join(self.env.bin, "docker-credential-fpulltest")
        with open(helper, "w") as f:
            f.write("#!/bin/sh\nread server\necho \"$server\" >> %s/asked\n"
                    "echo '{\"ServerURL\":\"'$server'\",\"Username\":\"alice\","
                    "\"Secret\":\"s3cret-pw\"}'\n" % self.env.dir)
        os.chmod(helper, 0o755)
        self.env.docker_config({"credHelpers": {self.reg.hostport: "fpulltest"}})
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([q["user"] for q in self.ts.requests], ["alice"])
        with open(os.path.join(self.env.dir, "asked")) as f:
            self.assertEqual(f.read().split(), [self.reg.hostport])

    def test_creds_store_helper(self):
        helper = os.path.join(self.env.bin, "docker-credential-fpulltest")
        with open(helper, "w") as f:
            f.write("#!/bin/sh\nread server\n"
                    "echo '{\"Username\":\"alice\",\"Secret\":\"s3cret-pw\"}'\n")
        os.chmod(helper, 0o755)
        self.ts.anonymous_pull = False
        self.env.docker_config({"credsStore": "fpulltest"})
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ts.requests[-1]["user"], "alice")

    def test_identity_token_refresh_grant(self):
        self.ts.anonymous_pull = False
        self.ts.refresh_tokens = {"refresh-Tok-123": "alice"}
        helper = os.path.join(self.env.bin, "docker-credential-fpulltest")
        with open(helper, "w") as f:
            f.write("#!/bin/sh\nread server\n"
                    "echo '{\"Username\":\"<token>\",\"Secret\":\"refresh-Tok-123\"}'\n")
        os.chmod(helper, 0o755)
        self.env.docker_config({"credHelpers": {self.reg.hostport: "fpulltest"}})
        r = self.env.run("-v", "manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("refresh-Tok-123", r.stderr)
        posts = [q for q in self.ts.requests if q["method"] == "POST"]
        self.assertEqual(len(posts), 1)
        self.assertEqual(posts[0]["user"], "alice")
        self.assertEqual(posts[0]["scopes"], ["repository:team/app:pull"])

    def test_registry_auth_file(self):
        self.ts.anonymous_pull = False
        path = os.path.join(self.env.dir, "auth.json")
        auth = base64.b64encode(b"alice:s3cret-pw").decode()
        with open(path, "w") as f:
            f.write('{"auths":{"%s":{"auth":"%s"}}}' % (self.reg.hostport, auth))
        self.env.env["REGISTRY_AUTH_FILE"] = path
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_token_with_crlf_refused(self):
        self.ts.override = lambda h: (200, {"Content-Type": "application/json"},
                                      b'{"token":"abc\\r\\nX-Evil: 1"}')
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("control characters", r.stderr)

    def test_token_response_over_1mib_refused(self):
        big = b'{"token":"' + b"a" * (1100 * 1024) + b'"}'
        self.ts.override = lambda h: (200, {"Content-Type": "application/json"}, big)
        r = self.env.run("manifest", self.reg.hostport, "team/app", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("over 1 MiB", r.stderr)

    def test_token_refreshed_on_401_mid_pull(self):
        # An expired token: the blob request gets a 401 once; a new token is fetched.
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        try:
            challenge = 'Bearer realm="%s",service="fpull-test",error="invalid_token"' % \
                self.ts.realm
            proxy.add(r"/blobs/", status=401, times=1,
                      headers={"WWW-Authenticate": challenge},
                      body=b'{"errors":[{"code":"UNAUTHORIZED"}]}')
            self.env.login(proxy.hostport, "alice", "s3cret-pw")
            out = os.path.join(self.env.dir, "blob")
            d = self.img["layers"][0]["digest"]
            r = self.env.run("blob", proxy.hostport, "team/app", d, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(proxy.count("/blobs/"), 2)
            self.assertEqual(len(self.ts.requests), 2)
            blob_reqs = proxy.matching("/blobs/")
            self.assertTrue(all(q["headers"].get("authorization", "").startswith("Bearer ")
                                for q in blob_reqs))
        finally:
            proxy.stop()


class BasicAuthTLS(unittest.TestCase):
    NAME = "registry.fpull.test"

    def setUp(self):
        self.env = regget.Env()
        self.ca = pki.CA(os.path.join(self.env.dir, "pki"))
        cert, key = self.ca.issue("registry", ips=["127.0.0.1"], dns=[self.NAME])
        pw = os.path.join(self.env.dir, "htpasswd")
        htpasswd(pw, "bob", "b0b-Secret")
        self.reg = registry.Registry(
            tls=(cert, key),
            auth={"htpasswd": {"realm": "fpull-test", "path": pw}}).start()
        client = images.Client(self.reg.url, username="bob", password="b0b-Secret",
                               cafile=self.ca.cert)
        self.img = images.push_image(client, "b/img", "v1", [LAYER])
        # A name that is not literally loopback, so TLS is verified as for any registry.
        self.named = "%s:%d" % (self.NAME, self.reg.port)
        self.env.env["FPULL_RESOLVE"] = "%s:%d:127.0.0.1" % (self.NAME, self.reg.port)
        self.certs = os.path.join(self.env.dir, "certs.d")
        pki.certs_d(self.certs, self.named, self.ca)

    def tearDown(self):
        self.reg.stop()
        self.env.cleanup()

    def test_basic_auth_over_tls(self):
        self.env.login(self.named, "bob", "b0b-Secret")
        r = self.env.run("--certs-dir", self.certs, "manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(regget.fields(r.stdout)["digest"], self.img["digest"])
        out = os.path.join(self.env.dir, "blob")
        r = self.env.run("--certs-dir", self.certs, "blob", self.named, "b/img",
                         self.img["config_digest"], out)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_basic_wrong_password_exit_4(self):
        self.env.login(self.named, "bob", "not-the-Password")
        r = self.env.run("-v", "--certs-dir", self.certs, "manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("authentication refused by %s for b/img" % self.named, r.stderr)
        self.assertNotIn("not-the-Password", r.stderr)

    def test_no_credentials_exit_4(self):
        r = self.env.run("--certs-dir", self.certs, "manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("no credentials found", r.stderr)

    def test_untrusted_certificate_exit_6_no_http_fallback(self):
        self.env.login(self.named, "bob", "b0b-Secret")
        r = self.env.run("manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("certificate", r.stderr.lower())
        self.assertNotIn("http://", r.stderr)

    def test_certs_dir_from_home_config(self):
        self.env.login(self.named, "bob", "b0b-Secret")
        pki.certs_d(os.path.join(self.env.home, ".config", "containers", "certs.d"),
                    self.named, self.ca)
        r = self.env.run("manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_insecure_skips_verification(self):
        self.env.login(self.named, "bob", "b0b-Secret")
        r = self.env.run("--insecure", "manifest", self.named, "b/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_loopback_literal_is_unverified(self):
        self.env.login(self.reg.hostport, "bob", "b0b-Secret")
        r = self.env.run("manifest", self.reg.hostport, "b/img", "v1")
        self.assertEqual(r.returncode, 0, r.stderr)


class HostileAuth(unittest.TestCase):
    """Challenges that must not get credentials: canned 401s in front of a registry."""

    def setUp(self):
        self.env = regget.Env()
        self.reg = registry.Registry().start()
        images.push_image(images.Client(self.reg.url), "h/img", "v1", [LAYER])
        self.proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.sink = faultproxy.FaultProxy(None).start()  # records what a realm would get
        self.env.login(self.proxy.hostport, "eve", "Eve-Secret-9")

    def tearDown(self):
        self.proxy.stop()
        self.sink.stop()
        self.reg.stop()
        self.env.cleanup()

    def challenge(self, value):
        self.proxy.add(r"^/v2/", status=401, headers={"WWW-Authenticate": value})
        return self.env.run("-v", "manifest", self.proxy.hostport, "h/img", "v1")

    def test_realm_with_bad_scheme_refused(self):
        r = self.challenge('Bearer realm="file:///etc/passwd",service="x"')
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("realm", r.stderr)
        self.assertNotIn("Eve-Secret-9", r.stderr)

    def test_realm_with_userinfo_refused(self):
        r = self.challenge('Bearer realm="http://u:p@%s/token"' % self.sink.hostport)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertEqual(self.sink.count("."), 0)

    def test_malformed_challenge_clear_error(self):
        r = self.challenge('Bearer realm="http://%s/token' % self.sink.hostport)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("malformed WWW-Authenticate", r.stderr)
        self.assertIn("unterminated", r.stderr)
        self.assertEqual(self.sink.count("."), 0)

    def test_unsupported_scheme_exit_4(self):
        r = self.challenge('Negotiate abc==')
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("negotiate", r.stderr)

    def test_token_realm_elsewhere_gets_credentials_only_over_https(self):
        # The registry is plain HTTP here, so an HTTP realm may get them (insecure setup).
        self.sink.add(r"^/token", status=200, body=b'{"token":"tok"}')
        r = self.challenge('Bearer realm="http://%s/token",service="s"' % self.sink.hostport)
        self.assertEqual(r.returncode, 4, r.stderr)
        got = self.sink.matching("^/token")
        self.assertTrue(got)
        self.assertTrue(got[0]["headers"].get("authorization", "").startswith("Basic "))


class InternalRealm(unittest.TestCase):
    def test_no_credentials_to_internal_ip_realm_of_named_registry(self):
        env = regget.Env()
        try:
            with registry.Registry() as reg:
                proxy = faultproxy.FaultProxy(reg.url).start()
                sink = faultproxy.FaultProxy(None).start()
                try:
                    name = "public.fpull.test:%d" % proxy.port
                    env.env["FPULL_RESOLVE"] = "public.fpull.test:%d:127.0.0.1" % proxy.port
                    env.login(name, "eve", "Eve-Secret-9")
                    sink.add(r"^/token", status=200, body=b'{"token":"tok"}')
                    proxy.add(r"^/v2/", status=401, headers={
                        "WWW-Authenticate": 'Bearer realm="http://%s/token"' % sink.hostport})
                    r = env.run("--insecure", "manifest", name, "h/img", "v1")
                    self.assertEqual(r.returncode, 4, r.stderr)
                    self.assertIn("internal address", r.stderr)
                    got = sink.matching("^/token")
                    self.assertTrue(got)
                    self.assertNotIn("authorization", got[0]["headers"])
                finally:
                    proxy.stop()
                    sink.stop()
        finally:
            env.cleanup()


class HTTPSRealmOnOtherHost(unittest.TestCase):
    def test_https_realm_verified_with_certs_d_and_gets_credentials(self):
        env = regget.Env()
        ca = pki.CA(os.path.join(env.dir, "pki"))
        tcert, tkey = ca.issue("tokens", ips=["127.0.0.1"], dns=["tokens.fpull.test"])
        ts = tokenserver.TokenServer(users={"alice": "Realm-pw-7"}, tls=(tcert, tkey),
                                     name="tokens.fpull.test").start()
        try:
            rcert, rkey = ca.issue("registry", ips=["127.0.0.1"], dns=["reg.fpull.test"])
            with registry.Registry(tls=(rcert, rkey), auth=ts.registry_auth()) as reg:
                named = "reg.fpull.test:%d" % reg.port
                env.env["FPULL_RESOLVE"] = "reg.fpull.test:%d:127.0.0.1,%s:127.0.0.1" % (
                    reg.port, ts.hostport)
                certs = os.path.join(env.dir, "certs.d")
                pki.certs_d(certs, named, ca)
                pki.certs_d(certs, ts.hostport, ca)
                env.login(named, "alice", "Realm-pw-7")
                r = env.run("--certs-dir", certs, "manifest", named, "s/img", "v1")
                # The repository is empty: reaching "not found" means the token exchange
                # over verified HTTPS worked with the credentials.
                self.assertEqual(r.returncode, 5, r.stderr)
                self.assertEqual([q["user"] for q in ts.requests], ["alice"])
                # Without the realm's CA the token exchange fails on the certificate.
                only_reg = os.path.join(env.dir, "certs2.d")
                pki.certs_d(only_reg, named, ca)
                r = env.run("--certs-dir", only_reg, "manifest", named, "s/img", "v1")
                self.assertEqual(r.returncode, 6, r.stderr)
                self.assertIn("certificate", r.stderr.lower())
        finally:
            ts.stop()
            env.cleanup()


class HTTPRealmOfHTTPSRegistry(unittest.TestCase):
    def test_credentials_not_sent_to_plain_http_realm(self):
        env = regget.Env()
        ts = tokenserver.TokenServer(users={"alice": "Https-Only-pw"}, anonymous_pull=True)
        ts.start()
        try:
            ca = pki.CA(os.path.join(env.dir, "pki"))
            cert, key = ca.issue("registry")
            with registry.Registry(tls=(cert, key), auth=ts.registry_auth()) as reg:
                client = images.Client(reg.url, username="alice", password="Https-Only-pw",
                                       cafile=ca.cert)
                images.push_image(client, "s/img", "v1", [LAYER])
                ts.requests.clear()
                env.login(reg.hostport, "alice", "Https-Only-pw")
                r = env.run("manifest", reg.hostport, "s/img", "v1")
                # Anonymous pull is allowed, so it works, but without the credentials.
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("not sending credentials to the plain-HTTP token realm",
                              r.stderr)
                self.assertTrue(ts.requests)
                self.assertTrue(all(q["authorization"] == "" for q in ts.requests))
        finally:
            ts.stop()
            env.cleanup()


class ProxyFromEnvironment(unittest.TestCase):
    def test_http_proxy_variable_used(self):
        env = regget.Env()
        try:
            with registry.Registry() as reg:
                images.push_image(images.Client(reg.url), "p/img", "v1", [LAYER])
                fwd = faultproxy.FaultProxy(reg.url).start()
                try:
                    env.env.update({"http_proxy": fwd.url, "https_proxy": fwd.url,
                                    "NO_PROXY": "", "no_proxy": ""})
                    r = env.run("manifest", reg.hostport, "p/img", "v1")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertGreaterEqual(fwd.count("/v2/p/img/manifests/v1"), 1)
                finally:
                    fwd.stop()
        finally:
            env.cleanup()


class MTLSRegistry(registry.Registry):
    """The fixture pings without a client certificate; here a TCP connect means up."""

    def _ping(self):
        import socket
        try:
            with socket.create_connection((self.host, self.port), timeout=1):
                return True
        except OSError:
            return False


class ClientCertificate(unittest.TestCase):
    NAME = "mtls.fpull.test"

    def test_client_certificate_from_certs_d(self):
        env = regget.Env()
        try:
            ca = pki.CA(os.path.join(env.dir, "pki"))
            cert, key = ca.issue("registry", ips=["127.0.0.1"], dns=[self.NAME])
            client = ca.issue("client", client=True)
            reg = MTLSRegistry(tls=(cert, key),
                                    extra={"http": {"tls": {"clientcas": [ca.cert]}}})
            with reg:
                named = "%s:%d" % (self.NAME, reg.port)
                env.env["FPULL_RESOLVE"] = "%s:%d:127.0.0.1" % (self.NAME, reg.port)
                first = os.path.join(env.dir, "first")
                second = os.path.join(env.dir, "second")
                pki.certs_d(first, named, ca)               # CA only
                pki.certs_d(second, named, client=client)   # client pair only
                # Without a client certificate the TLS handshake is refused: exit 6.
                r = env.run("--certs-dir", first, "manifest", named, "x/y", "v1")
                self.assertEqual(r.returncode, 6, r.stderr)
                # CAs from one directory, the client pair from another: both used.
                env.env["HOME"] = env.home
                pki.certs_d(os.path.join(env.home, ".config", "containers", "certs.d"),
                            named, client=client)
                r = env.run("--certs-dir", first, "manifest", named, "x/y", "v1")
                self.assertEqual(r.returncode, 5, r.stderr)  # reached: the tag is unknown
                self.assertIn("not found", r.stderr)
        finally:
            env.cleanup()


class CLIAuth(unittest.TestCase):
    """The same through `fpull pull`: exit codes and the one-line message."""

    def setUp(self):
        cases.require_tools(self)
        self.env = regget.Env()
        self.ts = tokenserver.TokenServer(users={"alice": "Cli-s3cret"}).start()
        self.reg = registry.Registry(auth=self.ts.registry_auth()).start()
        client = images.Client(self.reg.url, username="alice", password="Cli-s3cret")
        self.img = images.push_image(client, "cli/app", "v1", [LAYER])
        self.vars = {"DOCKER_CONFIG": self.env.docker, "HOME": self.env.home,
                     "FPULL_CACHE": os.path.join(self.env.dir, "cache")}
        self.dest = os.path.join(self.env.dir, "rootfs")

    def tearDown(self):
        self.reg.stop()
        self.ts.stop()
        self.env.cleanup()

    def test_cli_token_auth_with_credentials(self):
        self.env.login(self.reg.hostport, "alice", "Cli-s3cret")
        fpull.run(["pull", "%s/cli/app:v1" % self.reg.hostport, self.dest], env=self.vars,
                  check=0)
        with open(os.path.join(self.dest, "etc", "hostname")) as f:
            self.assertEqual(f.read(), "auth\n")
        self.assertTrue(self.ts.requests)
        self.assertTrue(all(q["user"] == "alice" for q in self.ts.requests))

    def test_cli_wrong_credentials_exit_4_no_password_even_verbose(self):
        self.env.login(self.reg.hostport, "alice", "Wr0ng-Cli-pw")
        r = fpull.run(["pull", "-v", "%s/cli/app:v1" % self.reg.hostport, self.dest],
                      env=self.vars, check=4)
        line = fpull.error_line(r.stderr)
        self.assertIn("authentication refused by %s for cli/app" % self.reg.hostport, line)
        self.assertNotIn("Wr0ng-Cli-pw", r.stderr + r.stdout)
        self.assertNotIn(base64.b64encode(b"alice:Wr0ng-Cli-pw").decode(), r.stderr)
        self.assertFalse(os.path.exists(self.dest))

    def test_cli_anonymous_refused_exit_4(self):
        r = fpull.run(["pull", "%s/cli/app:v1" % self.reg.hostport, self.dest],
                      env=self.vars, check=4)
        fpull.error_line(r.stderr)


class CLITLS(unittest.TestCase):
    NAME = "cli.fpull.test"

    def setUp(self):
        cases.require_tools(self)
        self.env = regget.Env()
        self.ca = pki.CA(os.path.join(self.env.dir, "pki"))
        cert, key = self.ca.issue("registry", ips=["127.0.0.1"], dns=[self.NAME])
        pw = os.path.join(self.env.dir, "htpasswd")
        htpasswd(pw, "carol", "Car0l-pw")
        self.reg = registry.Registry(
            tls=(cert, key), auth={"htpasswd": {"realm": "fpull-test", "path": pw}}).start()
        client = images.Client(self.reg.url, username="carol", password="Car0l-pw",
                               cafile=self.ca.cert)
        images.push_image(client, "c/img", "v1", [LAYER])
        self.named = "%s:%d" % (self.NAME, self.reg.port)
        self.certs = os.path.join(self.env.dir, "certs.d")
        pki.certs_d(self.certs, self.named, self.ca)
        self.env.login(self.named, "carol", "Car0l-pw")
        self.vars = {"DOCKER_CONFIG": self.env.docker, "HOME": self.env.home,
                     "FPULL_CACHE": os.path.join(self.env.dir, "cache"),
                     "FPULL_RESOLVE": "%s:%d:127.0.0.1" % (self.NAME, self.reg.port),
                     "FPULL_RETRY_BASE_MS": "20"}
        self.dest = os.path.join(self.env.dir, "rootfs")

    def tearDown(self):
        self.reg.stop()
        self.env.cleanup()

    def test_cli_basic_auth_over_tls_with_certs_dir(self):
        fpull.run(["pull", "--certs-dir", self.certs, "%s/c/img:v1" % self.named, self.dest],
                  env=self.vars, check=0)
        self.assertTrue(os.path.isfile(os.path.join(self.dest, "etc", "hostname")))

    def test_cli_untrusted_certificate_exit_6(self):
        r = fpull.run(["pull", "%s/c/img:v1" % self.named, self.dest], env=self.vars, check=6)
        self.assertIn("certificate", fpull.error_line(r.stderr).lower())

    def test_cli_insecure(self):
        fpull.run(["pull", "--insecure", "%s/c/img:v1" % self.named, self.dest],
                  env=self.vars, check=0)


if __name__ == "__main__":
    unittest.main()
