"""inspect fits 80 columns on a terminal (wider ones get more), --no-trunc shows whole
digests, a single-platform image shows its size, layers, date and config, and --json
fails with an error object as pull does (issue 34.6). Against the real registry."""
import json
import os
import re
import shlex
import subprocess

import cases
import fpull
import images

FILES = [{"path": "etc/x", "type": "file", "data": "x\n"}]
FEATS = ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "fma", "avx2", "bmi2"]


class InspectWidth(cases.RegistryCase):
    tmp_prefix = "fpull-inspw-"

    def setUp(self):
        super().setUp()
        a = images.push_image(self.client, "w/img", None, [FILES], architecture="amd64")
        b = images.push_image(self.client, "w/img", None, [FILES, FILES + [
            {"path": "etc/y", "type": "file", "data": "y"}]], architecture="arm64")
        self.entries = [a, b]
        images.push_index(self.client, "w/img", "v1", [
            (a, {"os": "linux", "architecture": "amd64", "features": FEATS}),
            (b, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        self.ref = "%s/w/img:v1" % self.reg.hostport
        self.single = images.push_image(
            self.client, "w/one", "s", [FILES, FILES],
            config_extra={"config": {"Entrypoint": ["/bin/app"], "Cmd": ["--serve"],
                                     "WorkingDir": "/srv", "User": "app",
                                     "Env": ["A=1", "B=2"]}})
        self.one = "%s/w/one:s" % self.reg.hostport

    def on_tty(self, cols, *args):
        cmd = "stty cols %d rows 40; %s" % (cols, " ".join(
            shlex.quote(a) for a in [fpull.binary()] + list(args)))
        cp = subprocess.run(["script", "-qec", cmd, "/dev/null"],
                            env=fpull.base_env({"COLUMNS": None}), capture_output=True,
                            text=True, timeout=60)
        return cp.stdout.replace("\r\n", "\n")

    def test_table_fits_80_columns_and_wider_terminals_get_more(self):
        shown = self.on_tty(80, "inspect", "--platform", "linux/arm64/v8", self.ref)
        rows = shown.splitlines()
        self.assertIn("chosen: " + self.entries[1]["digest"], shown)
        for row in rows:
            if row.startswith("chosen: ") or row.startswith(self.ref):
                continue
            self.assertLessEqual(len(row), 79, repr(row))
        self.assertTrue(any(r.startswith("RANK") for r in rows), shown)
        self.assertIn("+", shown)  # the long feature list was cut
        wide = self.on_tty(200, "inspect", "--platform", "linux/arm64/v8", self.ref)
        self.assertIn(",".join(FEATS), wide)
        self.assertLess(len(wide.splitlines()), len(rows) + 1)

    def test_no_trunc_shows_whole_digests(self):
        cp = fpull.run(["inspect", "--no-trunc", "--platform", "linux/arm64/v8", self.ref],
                       env={"COLUMNS": "80"}, check=0)
        for e in self.entries:
            self.assertRegex(cp.stdout, r"\n\S+\s+%s\s" % re.escape(e["digest"]))
        self.assertIn(",".join(FEATS), cp.stdout)
        cp = fpull.run(["inspect", "--platform", "linux/arm64/v8", self.ref],
                       env={"COLUMNS": "80"}, check=0)
        self.assertNotRegex(cp.stdout, r"\n[-0-9]+\s+sha256:")

    def test_single_platform_image_summary(self):
        cp = fpull.run(["inspect", "--platform", "linux/amd64", self.one], check=0)
        total = sum(l["size"] for l in self.single["layers"])
        self.assertRegex(cp.stdout, r"\nsize: \S+ \S+ in 2 layers\n")
        self.assertIn("created: 2023-11-14T22:13:20Z", cp.stdout)
        self.assertIn('Entrypoint: ["/bin/app"]', cp.stdout)
        self.assertIn('Cmd: ["--serve"]', cp.stdout)
        self.assertIn("WorkingDir: /srv", cp.stdout)
        self.assertIn("User: app", cp.stdout)
        self.assertIn("Env: 2 variables", cp.stdout)
        cp, doc = fpull.run_json(["inspect", "--platform", "linux/amd64", self.one])
        self.assertEqual((doc["layers"], doc["size"]), (2, total))

    def test_json_error_object_on_failure(self):
        cp, doc = fpull.run_json(["inspect", "%s/w/nope:v1" % self.reg.hostport], check=5)
        self.assertEqual(doc["error"]["code"], 5)
        self.assertIn("not found", doc["error"]["message"])
        self.assertEqual(doc["reference"], "%s/w/nope:v1" % self.reg.hostport)
        cp, doc = fpull.run_json(["inspect", "Bad/Ref"], check=2)
        self.assertEqual(doc["error"]["code"], 2)
