"""`fpull manifest push` and `fpull manifest inspect` against the real registry (issue 8).

The spec is the eleven-entry index of the proposal (issue 3's table). The entry images
live in their own repositories (cv-tf-dev, cv-nccl90-tf-dev, cv-nccl92-tf-dev), so fpull
must copy each into the target repository before it pushes the index; the result is read
back with skopeo, and `fpull pull` of it must pick as the ranking says.
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import unittest

import cases
import demo_index
import fpull
import images
import registry
import tokenserver

# The eleven entries of the proposal's index, shared with the demo.
ROWS = demo_index.DEMO_ROWS
TARGET_REPO = "qnib/cv-tf"
TARGET_TAG = "1.12.0-rev9"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def yaml_str(s):
    return json.dumps(s)  # a JSON string is a valid double-quoted YAML scalar


def spec_text(target, entries, extra=""):
    """entries: (image, platform dict) pairs; platform keys written in the given order."""
    out = ["image: %s" % yaml_str(target), extra.rstrip("\n"), "manifests:"]
    for image, plat in entries:
        out.append("  - image: %s" % yaml_str(image))
        out.append("    platform:")
        for k, v in plat.items():
            if isinstance(v, list):
                out.append("      %s: [%s]" % (k, ", ".join(yaml_str(x) for x in v)))
            else:
                out.append("      %s: %s" % (k, yaml_str(v)))
    return "\n".join(line for line in out if line) + "\n"


class ManifestPushTestCase(cases.RegistryCase):
    tmp_prefix = "fpull-mpush-"
    tools = ("skopeo",)

    def setUp(self):
        super().setUp()
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}

    # ---- helpers ----
    def fpull(self, args, check=None, env=None):
        e = dict(self.env)
        e.update(env or {})
        cp = fpull.run(args, env=e, cwd=self.tmp)
        if check is not None and cp.returncode != check:
            self.fail("fpull %s: exit %d, expected %d\nstdout: %s\nstderr: %s\nregistry log "
                      "tail:\n%s" % (" ".join(args), cp.returncode, check, cp.stdout,
                                     cp.stderr, self.reg.log()[-2000:]))
        return cp

    def write(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def skopeo_raw(self, ref):
        cp = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                             "docker://" + ref], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stderr.decode())
        return cp.stdout

    def push_rows(self, client, hostport, fmt):
        """Pushes one small image per row into the row's repository; returns the spec
        entries and the pushed images."""
        entries, pushed = [], []
        for name, features in ROWS:
            repo, tag = name.split(":")
            layer = [{"path": "etc", "type": "dir", "mode": 0o755},
                     {"path": "etc/fpull-demo", "data": name + "\n", "mode": 0o644}]
            img = images.push_image(client, "qnib/" + repo, tag, [layer], fmt=fmt)
            plat = {"os": "linux", "architecture": "amd64"}
            if features:
                plat["features"] = list(features)
            entries.append(("%s/qnib/%s" % (hostport, name), plat))
            pushed.append(img)
        return entries, pushed

    def target(self, tag=TARGET_TAG):
        return "%s/%s:%s" % (self.reg.hostport, TARGET_REPO, tag)

    def check_index(self, raw, digest, pushed, mt_index, mt_manifest):
        self.assertEqual(sha256(raw), digest)
        doc = json.loads(raw)
        self.assertEqual(doc["schemaVersion"], 2)
        self.assertEqual(doc["mediaType"], mt_index)
        self.assertEqual(len(doc["manifests"]), len(ROWS))
        for (name, features), img, entry in zip(ROWS, pushed, doc["manifests"]):
            self.assertEqual(entry["digest"], img["digest"], name)
            self.assertEqual(entry["size"], img["size"], name)
            self.assertEqual(entry["mediaType"], mt_manifest, name)
            plat = entry["platform"]
            self.assertEqual((plat["os"], plat["architecture"]), ("linux", "amd64"))
            self.assertNotIn("variant", plat)
            if features:
                self.assertEqual(plat["features"], features, name)  # order kept
            else:
                self.assertNotIn("features", plat, name)
        return doc

    def check_copied(self, pushed):
        """Every entry manifest and its blobs are in the target repository now."""
        for img in pushed:
            raw = self.skopeo_raw("%s/%s@%s" % (self.reg.hostport, TARGET_REPO, img["digest"]))
            self.assertEqual(raw, img["manifest"])
            for blob in [img["config_digest"]] + [l["digest"] for l in img["layers"]]:
                status, _, body = self.client.get("/v2/%s/blobs/%s" % (TARGET_REPO, blob))
                self.assertEqual(status, 200, blob)
                self.assertEqual(sha256(body), blob)

    def round_trip(self, fmt, args, mt_index, mt_manifest):
        entries, pushed = self.push_rows(self.client, self.reg.hostport, fmt)
        spec = self.write("spec.yaml", spec_text(self.target(), entries))
        cp = self.fpull(["manifest", "push", "--json"] + args + [spec], check=0)
        out = json.loads(cp.stdout)
        self.assertEqual(out["reference"], self.target())
        self.assertEqual(out["media_type"], mt_index)
        self.assertEqual(out["copied"], len(ROWS))
        self.assertEqual([m["digest"] for m in out["manifests"]], [p["digest"] for p in pushed])
        raw = self.skopeo_raw(self.target())
        self.assertEqual(out["size"], len(raw))
        self.check_index(raw, out["digest"], pushed, mt_index, mt_manifest)
        self.check_copied(pushed)
        return out, pushed

    # ---- tests ----
    def test_push_oci_eleven_entries(self):
        self.round_trip("oci", [], OCI_INDEX, OCI_MANIFEST)
        # Within one registry the blobs are mounted, never downloaded from the sources.
        log = self.reg.log()
        self.assertIn("mount=sha256", log)
        self.assertIsNone(re.search(r"GET /v2/qnib/cv-[a-z0-9-]+-dev/blobs/", log))

    def test_push_docker_eleven_entries(self):
        self.round_trip("docker", ["--type", "docker"], DOCKER_LIST, DOCKER_MANIFEST)

    def test_plain_output_is_the_digest(self):
        entries, pushed = self.push_rows(self.client, self.reg.hostport, "oci")
        spec = self.write("spec.yaml", spec_text(self.target(), entries[:3]))
        cp = self.fpull(["manifest", "push", spec], check=0)
        raw = self.skopeo_raw(self.target())
        self.assertEqual(cp.stdout, sha256(raw) + "\n")
        # Pushing the same spec again gives the same digest and copies nothing new.
        cp2 = self.fpull(["manifest", "push", spec], check=0)
        self.assertEqual(cp2.stdout, cp.stdout)

    def test_pull_picks_from_pushed_index(self):
        out, pushed = self.round_trip("oci", [], OCI_INDEX, OCI_MANIFEST)
        cases = [
            ("linux/amd64:broadwell:nv-compute-5-2:nvidia-396-44", 10),
            ("linux/amd64:skylake512:nvidia-396-44", 7),
            ("linux/amd64/v1", 0),  # bare linux/amd64 would keep this host's features
            ("linux/amd64:nvidia-390-30", 2),
        ]
        for i, (plat, want) in enumerate(cases):
            dest = os.path.join(self.tmp, "rootfs%d" % i)
            cp = self.fpull(["pull", "--json", "--platform", plat, self.target(), dest], check=0)
            doc = json.loads(cp.stdout)
            self.assertEqual(doc["index_digest"], out["digest"], plat)
            self.assertEqual(doc["manifest_digest"], pushed[want]["digest"], plat)
            with open(os.path.join(dest, "etc", "fpull-demo")) as f:
                self.assertEqual(f.read(), ROWS[want][0] + "\n", plat)

    def test_copy_from_another_registry_and_extra_tags(self):
        other = registry.Registry().start()
        self.addCleanup(other.stop)
        oclient = images.Client(other.url)
        entries, pushed = self.push_rows(oclient, other.hostport, "oci")
        spec = self.write("spec.yaml", spec_text(self.target(), entries[:4],
                                                 extra="tags: [latest, \"v1\"]\n"))
        cp = self.fpull(["manifest", "push", "--json", spec], check=0)
        out = json.loads(cp.stdout)
        self.assertEqual(out["copied"], 4)
        raw = self.skopeo_raw(self.target())
        self.assertEqual(sha256(raw), out["digest"])
        for tag in ("latest", "v1"):
            self.assertEqual(self.skopeo_raw(self.target(tag)), raw)
        self.check_copied(pushed[:4])
        # Across registries nothing can be mounted: the blobs were downloaded and uploaded.
        self.assertNotIn("mount=", self.reg.log())
        self.assertIsNotNone(re.search(r"GET /v2/qnib/cv-[a-z0-9-]+-dev/blobs/sha256", other.log()))

    def test_entry_in_target_repository_is_not_copied(self):
        layer = [{"path": "x", "data": "in place\n"}]
        img = images.push_image(self.client, TARGET_REPO, "amd64", [layer])
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/%s:amd64" % (self.reg.hostport, TARGET_REPO),
             {"os": "linux", "architecture": "amd64", "variant": "v3",
              "features": ["x86-64-v3"]})]))
        out = json.loads(self.fpull(["manifest", "push", "--json", spec], check=0).stdout)
        self.assertEqual(out["copied"], 0)
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual(doc["manifests"][0]["digest"], img["digest"])
        self.assertEqual(doc["manifests"][0]["platform"],
                         {"architecture": "amd64", "os": "linux", "variant": "v3",
                          "features": ["x86-64-v3"]})

    def test_source_index_gives_its_platform_entry(self):
        amd = images.push_image(self.client, "multi/src", None, [[{"path": "a", "data": "a"}]])
        arm = images.push_image(self.client, "multi/src", None, [[{"path": "b", "data": "b"}]],
                                architecture="arm64", variant="v8")
        images.push_index(self.client, "multi/src", "latest", [
            (amd, {"os": "linux", "architecture": "amd64"}),
            (arm, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        src = "%s/multi/src:latest" % self.reg.hostport
        spec = self.write("spec.yaml", spec_text(self.target(), [
            (src, {"os": "linux", "architecture": "arm64", "variant": "v8"}),
            (src, {"os": "linux", "architecture": "amd64", "features": ["avx2"]})]))
        out = json.loads(self.fpull(["manifest", "push", "--json", spec], check=0).stdout)
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual(doc["manifests"][0]["digest"], arm["digest"])
        self.assertEqual(doc["manifests"][1]["digest"], amd["digest"])
        self.assertEqual(out["copied"], 2)
        # An index without the asked-for platform is a usage error naming the entry.
        spec = self.write("bad.yaml", spec_text(self.target(), [
            (src, {"os": "linux", "architecture": "s390x"})]))
        cp = self.fpull(["manifest", "push", spec], check=2)
        line = fpull.error_line(cp.stderr)
        self.assertIn("bad.yaml:3:5:", line)
        self.assertIn("s390x", line)
        self.assertEqual(line.count(src), 1, line)  # issue 23.7: not "REF: REF is ..."

    def test_source_index_nested_and_non_image_entries(self):
        # Issue 23: the source index is read as pull reads it: an entry of another
        # mediaType is passed over, a nested index followed, an entry without platform
        # takes its config's.
        amd = images.push_image(self.client, "multi/src", None, [[{"path": "a", "data": "a"}]])
        other = images.push_image(self.client, "multi/src", None, [[{"path": "o", "data": "o"}]])
        arm = images.push_image(self.client, "multi/src", None, [[{"path": "b", "data": "b"}]],
                                architecture="arm64")
        nested = images.push_index(self.client, "multi/src", None, [(arm, None)])
        images.push_index(self.client, "multi/src", "mixed", [
            {"mediaType": "application/vnd.example.manifest.v2+json", "digest": other["digest"],
             "size": other["size"], "platform": {"os": "linux", "architecture": "amd64"}},
            (amd, {"os": "linux", "architecture": "amd64"}),
            {"mediaType": images.OCI_INDEX, "digest": nested["digest"], "size": nested["size"]}])
        src = "%s/multi/src:mixed" % self.reg.hostport
        spec = self.write("spec.yaml", spec_text(self.target(), [
            (src, {"os": "linux", "architecture": "amd64"}),
            (src, {"os": "linux", "architecture": "arm64"})]))
        self.fpull(["manifest", "push", "--json", spec], check=0)
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual([m["digest"] for m in doc["manifests"]], [amd["digest"], arm["digest"]])

    def test_missing_source_is_not_found(self):
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/nope/nothing:1" % self.reg.hostport, {"os": "linux", "architecture": "amd64"})]))
        cp = self.fpull(["manifest", "push", spec], check=5)
        line = fpull.error_line(cp.stderr)
        self.assertIn("spec.yaml:3:5:", line)
        self.assertIn("nope/nothing", line)

    def test_bad_specs_exit_2_with_position(self):
        good = "%s/a/b:1" % self.reg.hostport
        cases = [
            ("image: t/t:1\nmanifests:\n  - image: %s\n    platfrom: {}\n" % good,
             "unknown.yaml:4:5:", "platfrom"),
            ("image: t/t:1\nmanifests:\n"
             "  - image: %s\n    platform: {os: linux, architecture: amd64, features: [a, b]}\n"
             "  - image: %s\n    platform: {os: linux, architecture: amd64, features: [b, a]}\n"
             % (good, good), "dup.yaml:5:5:", "duplicate platform"),
            ("image: t/t:1\nmanifests:\n  - platform: {os: linux, architecture: amd64}\n",
             "noimage.yaml:3:5:", "without image"),
            ("manifests:\n  - image: %s\n    platform: {os: linux, architecture: amd64}\n"
             % good, "notarget.yaml:1:1:", "no image"),
            ("image: t/t:1\nmanifests: [\n", "broken.yaml:", ""),
        ]
        for text, where, what in cases:
            spec = self.write(where.split(":")[0], text)
            cp = self.fpull(["manifest", "push", spec], check=2)
            line = fpull.error_line(cp.stderr)
            self.assertIn(os.path.join(self.tmp, where), line)
            self.assertIn(what, line)
        cp = self.fpull(["manifest", "push", os.path.join(self.tmp, "missing.yaml")], check=2)
        self.assertIn("missing.yaml", fpull.error_line(cp.stderr))
        cp = self.fpull(["manifest", "push", "--type", "zip", spec], check=2)
        cp = self.fpull(["manifest", "frobnicate", spec], check=2)

    def test_unknown_feature_names_are_refused(self):
        # Contract v3: a spec's names are checked like the command line's; a typo in an
        # index would leave its entry unreachable for the nodes it was built for.
        img = images.push_image(self.client, "w/src", "1", [[{"path": "a", "data": "a"}]])
        for feats, where, what, near in (
                (["broadwell", "frobnicator"], "spec.yaml:7:", "frobnicator", None),
                (["brodwell"], "spec.yaml:7:", "brodwell", "broadwell"),
                (["nvidia-396.44"], "spec.yaml:7:", "nvidia-396.44", "nvidia-396-44")):
            spec = self.write("spec.yaml", spec_text(self.target(), [
                ("%s/w/src:1" % self.reg.hostport,
                 {"os": "linux", "architecture": "amd64", "features": feats})]))
            cp = self.fpull(["manifest", "push", spec], check=2)
            line = fpull.error_line(cp.stderr)
            self.assertIn(where, line)
            self.assertIn('"%s"' % what, line)
            if near:
                self.assertIn('did you mean "%s"' % near, line)
            gone = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                                   "docker://" + self.target()], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=120)
            self.assertNotEqual(gone.returncode, 0, "nothing may be pushed")
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/w/src:1" % self.reg.hostport,
             {"os": "linux", "architecture": "amd46"})]))
        cp = self.fpull(["manifest", "push", spec], check=2)
        self.assertIn('did you mean "amd64"', fpull.error_line(cp.stderr))
        # Declared under site-features, a site's own name is accepted and kept.
        cfg = self.write("site.yaml", "site-features: [frobnicator]\n")
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/w/src:1" % self.reg.hostport,
             {"os": "linux", "architecture": "amd64",
              "features": ["broadwell", "frobnicator"]})]))
        cp = self.fpull(["manifest", "push", "--config", cfg, spec], check=0)
        # The one warning: broadwell implies v3, which the entry does not declare (issue 33).
        self.assertEqual([l for l in cp.stderr.splitlines() if l.startswith("fpull: warning: ")
                          and "imply variant v3" not in l], [])
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual(doc["manifests"][0]["digest"], img["digest"])
        self.assertEqual(doc["manifests"][0]["platform"]["features"],
                         ["broadwell", "frobnicator"])

    def test_undeclared_variant_implied_by_features_warns(self):
        # Issue 33: icelake-server implies x86-64-v4; fpull ranks the entry so, other clients
        # go by the variant, so a spec that leaves it out is warned about (and still pushed).
        img = images.push_image(self.client, "w/src", "1", [[{"path": "a", "data": "a"}]])
        src = "%s/w/src:1" % self.reg.hostport
        spec = self.write("spec.yaml", spec_text(self.target(), [
            (src, {"os": "linux", "architecture": "amd64", "features": ["icelake-server"]}),
            (src, {"os": "linux", "architecture": "amd64", "variant": "v2",
                   "features": ["haswell"]}),
            (src, {"os": "linux", "architecture": "amd64", "variant": "v4",
                   "features": ["skylake-avx512"]}),
            (src, {"os": "linux", "architecture": "arm64", "features": ["neoverse-v1"]})]))
        cp = self.fpull(["manifest", "push", spec], check=0)
        warnings = [l for l in cp.stderr.splitlines() if l.startswith("fpull: warning: ")]
        self.assertEqual(len(warnings), 2, cp.stderr)
        self.assertIn("spec.yaml:3:", warnings[0])
        self.assertIn("imply variant v4, which it does not declare", warnings[0])
        self.assertIn("imply variant v3, which it does not declare; it says v2", warnings[1])
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual([m["digest"] for m in doc["manifests"]], [img["digest"]] * 4)

    def test_docker_list_of_oci_manifests_warns(self):
        images.push_image(self.client, "w/oci", "1", [[{"path": "a", "data": "a"}]])
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/w/oci:1" % self.reg.hostport, {"os": "linux", "architecture": "amd64"})]))
        cp = self.fpull(["manifest", "push", "--type", "docker", spec], check=0)
        self.assertIn("fpull: warning: ", cp.stderr)
        self.assertIn("not a Docker manifest", cp.stderr)
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual(doc["mediaType"], DOCKER_LIST)
        self.assertEqual(doc["manifests"][0]["mediaType"], OCI_MANIFEST)

    def test_config_file_errors_and_warnings(self):
        img = images.push_image(self.client, "c/src", "1", [[{"path": "a", "data": "a"}]])
        spec = self.write("spec.yaml", spec_text(self.target(), [
            ("%s/c/src:1" % self.reg.hostport, {"os": "linux", "architecture": "amd64"})]))
        bad = self.write("bad-config.yaml", "registry-mirrors: {}\ndetect: maybe\n")
        for args, env in ((["--config", bad], {}), ([], {"FPULL_CONFIG": bad})):
            cp = self.fpull(["manifest", "push"] + args + [spec], check=2, env=env)
            self.assertIn(bad + ":2:9: detect must be true or false",
                          fpull.error_line(cp.stderr))
        broken = self.write("broken-config.yaml", "insecure-registries: [a\n")
        cp = self.fpull(["manifest", "push", "--config", broken, spec], check=2)
        self.assertIn(broken + ":2:", fpull.error_line(cp.stderr))
        cp = self.fpull(["manifest", "push", "--config", os.path.join(self.tmp, "none.yaml"),
                         spec], check=2)
        self.assertIn("none.yaml", fpull.error_line(cp.stderr))
        # Unknown keys: a warning with the position, and the push goes on.
        odd = self.write("odd-config.yaml", "detect: true\nregistry-mirror: {}\n")
        cp = self.fpull(["manifest", "push", "--config", odd, spec], check=0)
        self.assertIn("fpull: warning: %s:2:1: unknown key \"registry-mirror\"" % odd, cp.stderr)
        doc = json.loads(self.skopeo_raw(self.target()))
        self.assertEqual(doc["manifests"][0]["digest"], img["digest"])

    def test_push_with_token_auth(self):
        ts = tokenserver.TokenServer(users={"alice": "pa55-word"}).start()
        self.addCleanup(ts.stop)
        reg = registry.Registry(auth=ts.registry_auth()).start()
        self.addCleanup(reg.stop)
        client = images.Client(reg.url, username="alice", password="pa55-word")
        img = images.push_image(client, "team/src", "1", [[{"path": "a", "data": "a"}]])
        target = "%s/team/idx:1" % reg.hostport
        spec = self.write("spec.yaml", spec_text(target, [
            ("%s/team/src:1" % reg.hostport, {"os": "linux", "architecture": "amd64"})]))
        docker = os.path.join(self.tmp, "docker")
        os.makedirs(docker)

        def login(password):
            auth = base64.b64encode(("alice:" + password).encode()).decode()
            with open(os.path.join(docker, "config.json"), "w") as f:
                json.dump({"auths": {reg.hostport: {"auth": auth}}}, f)

        login("wrong")
        cp = self.fpull(["manifest", "push", spec], check=4, env={"DOCKER_CONFIG": docker})
        self.assertNotIn("wrong", cp.stderr)
        login("pa55-word")
        ts.requests.clear()
        cp = self.fpull(["manifest", "push", spec], check=0, env={"DOCKER_CONFIG": docker})
        self.assertNotIn("pa55-word", cp.stdout + cp.stderr)
        scopes = [sc for q in ts.requests for sc in q["scopes"]]
        self.assertIn("repository:team/idx:pull,push", scopes)
        self.assertTrue(all(q["user"] == "alice" for q in ts.requests))
        status, _, body = client.get("/v2/team/idx/manifests/1")
        self.assertEqual(status, 200)
        self.assertEqual(cp.stdout.strip(), sha256(body))
        self.assertEqual(json.loads(body)["manifests"][0]["digest"], img["digest"])
        # The copied manifest and its blobs are in the target repository.
        status, _, _ = client.get("/v2/team/idx/manifests/" + img["digest"])
        self.assertEqual(status, 200)
        status, _, _ = client.get("/v2/team/idx/blobs/" + img["layers"][0]["digest"])
        self.assertEqual(status, 200)

    def test_manifest_inspect_prints_raw_bytes(self):
        img = images.push_image(self.client, "raw/img", "1", [[{"path": "a", "data": "a"}]])
        idx = images.push_index(self.client, "raw/img", "multi", [
            (img, {"os": "linux", "architecture": "amd64", "features": ["sse4"]})])
        for ref, body in (("raw/img:1", img["manifest"]), ("raw/img:multi", idx["body"]),
                          ("raw/img@" + img["digest"], img["manifest"])):
            cp = subprocess.run([fpull.binary(), "manifest", "inspect",
                                 "%s/%s" % (self.reg.hostport, ref)],
                                env=fpull.base_env(self.env), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=120)
            self.assertEqual(cp.returncode, 0, cp.stderr)
            self.assertEqual(cp.stdout, body, ref)
            self.assertEqual(cp.stdout, self.skopeo_raw("%s/%s" % (self.reg.hostport, ref)))
        cp = self.fpull(["manifest", "inspect", "%s/raw/none:1" % self.reg.hostport], check=5)
        fpull.error_line(cp.stderr)


if __name__ == "__main__":
    unittest.main()
