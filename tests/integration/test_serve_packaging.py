"""fpull serve's node packaging: the systemd socket unit's hand-over (socket activation),
the units' loopback listener, and the Kubernetes DaemonSet's hosts.toml step."""
import configparser
import http.client
import os
import socket
import subprocess
import tempfile
import time
import unittest

import fpull

SRC = fpull.SRC_DIR


def unit(name):
    p = configparser.ConfigParser(strict=False, interpolation=None)
    p.optionxform = str
    p.read(os.path.join(SRC, "packaging", "systemd", name))
    return p


class Packaging(unittest.TestCase):
    def test_units_listen_on_loopback_through_socket_activation(self):
        sock, svc = unit("fpull-serve.socket"), unit("fpull-serve.service")
        self.assertEqual(sock["Socket"]["ListenStream"], "127.0.0.1:5050")
        self.assertEqual(svc["Service"]["ExecStart"], "/usr/bin/fpull serve")
        self.assertEqual(svc["Unit"]["Requires"], "fpull-serve.socket")

    def test_socket_activation(self):
        # What systemd does: a bound socket as fd 3, LISTEN_FDS=1, LISTEN_PID the server's.
        tmp = tempfile.mkdtemp(prefix="fpull-serve-sd-")
        self.addCleanup(fpull.rmtree, tmp)
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        port = ls.getsockname()[1]
        env = fpull.base_env({"FPULL_CACHE": os.path.join(tmp, "cache"), "LISTEN_FDS": "1"})
        p = subprocess.Popen(["sh", "-c", 'LISTEN_PID=$$ exec "$0" serve 3<&"$1"',
                              fpull.binary(), str(ls.fileno())], env=env,
                             pass_fds=[ls.fileno()], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        ls.close()
        try:
            line = p.stdout.readline().decode().strip()
            self.assertEqual(line, "127.0.0.1:%d" % port, p.stderr.read1(4096))
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/v2/")
            r = c.getresponse()
            self.assertEqual((r.status, r.read()), (200, b"{}"))
            c.close()
        finally:
            p.terminate()
            self.assertEqual(p.wait(timeout=30), 0)
            p.stdout.close()
            p.stderr.close()

    def test_daemonset_writes_containerd_hosts_toml(self):
        with open(os.path.join(SRC, "contrib", "kubernetes", "fpull-serve.yaml")) as f:
            text = f.read()
        for want in ("hostNetwork: true", '"--listen", "127.0.0.1:5050"', "config_path",
                     "/etc/containerd/certs.d"):
            self.assertIn(want, text)
        # The init container's step, for one registry.
        out = subprocess.run(["sh", "-c", '"$0" serve --listen 127.0.0.1:5050 --print-config '
                              'containerd ghcr.io | sed -n "/^server = /,\\$p"',
                              fpull.binary()], capture_output=True, text=True,
                             env=fpull.base_env(), check=True).stdout
        self.assertEqual(out, 'server = "https://ghcr.io"\n\n[host."http://127.0.0.1:5050"]\n'
                              '  capabilities = ["pull", "resolve"]\n')
