"""Runs tests/tools/fpull-regget (the registry client driver) for the transport tests."""
import os
import shutil
import subprocess
import tempfile
import unittest


def binary():
    build = os.environ.get("FPULL_BUILD_DIR")
    path = os.path.join(build, "tests", "fpull-regget") if build else None
    if not path or not os.access(path, os.X_OK):
        raise unittest.SkipTest("fpull-regget not built (FPULL_BUILD_DIR=%s)" % build)
    return path


class Env:
    """A private HOME, DOCKER_CONFIG and PATH for one test."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fpull-regget-")
        self.home = os.path.join(self.dir, "home")
        self.docker = os.path.join(self.dir, "docker")
        self.bin = os.path.join(self.dir, "bin")
        for d in (self.home, self.docker, self.bin):
            os.makedirs(d)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR")
                    and not k.lower().endswith("_proxy")}
        self.env.update({"HOME": self.home, "DOCKER_CONFIG": self.docker,
                         "PATH": self.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                         "FPULL_RETRY_BASE_MS": "20"})

    def docker_config(self, cfg):
        import json
        with open(os.path.join(self.docker, "config.json"), "w") as f:
            json.dump(cfg, f)

    def login(self, hostport, user, password):
        import base64
        auth = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.docker_config({"auths": {hostport: {"auth": auth}}})

    def run(self, *args, timeout=120):
        return subprocess.run([binary()] + [str(a) for a in args], env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def fields(stdout):
    out = {}
    for line in stdout.splitlines():
        k, _, v = line.partition(" ")
        out[k] = v
    return out
