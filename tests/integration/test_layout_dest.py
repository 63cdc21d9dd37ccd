"""pull to oci:DIR[:TAG], oci-archive:FILE[:TAG] and docker-archive:FILE[:REF] (issue 34.1):
the chosen entry of an index as an OCI image layout, its tar, and a docker-load tar, read
back by skopeo and umoci with the registry's digests; docker://IMAGE; any other WORD: DEST
refused. Against the real registry."""
import json
import os
import subprocess
import tarfile

import cases
import fpull
import images

FILES_AMD = [{"path": "etc/hello", "type": "file", "data": "amd64\n"},
             {"path": "bin/tool", "type": "file", "data": "tool-amd\n", "mode": 0o755}]
FILES_ARM = [{"path": "etc/hello", "type": "file", "data": "arm64\n"},
             {"path": "usr/share/doc/x", "type": "file", "data": "doc\n"}]


class LayoutDest(cases.RegistryCase):
    tmp_prefix = "fpull-layout-"
    tools = ("skopeo", "umoci")

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.amd = images.push_image(self.client, "lay/img", None, [FILES_AMD],
                                     architecture="amd64")
        self.arm = images.push_image(self.client, "lay/img", None,
                                     [FILES_ARM, images.random_layer("big", 50000)],
                                     architecture="arm64", variant="v8")
        self.index = images.push_index(self.client, "lay/img", "v1", [
            (self.amd, {"os": "linux", "architecture": "amd64"}),
            (self.arm, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        self.ref = "%s/lay/img:v1" % self.reg.hostport

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def pull(self, dest, *extra, check=0, image=None):
        return fpull.run(["pull", "-q", "--platform", "linux/arm64/v8", "--cache-dir",
                          self.cache] + list(extra) + [image or self.ref, dest],
                         check=check, cwd=self.tmp)

    def skopeo_inspect(self, ref, *extra):
        cp = subprocess.run(["skopeo", "inspect"] + list(extra) + [ref], check=True,
                            capture_output=True, text=True)
        return json.loads(cp.stdout) if "--raw" not in extra else cp.stdout

    def umoci_files(self, layout_ref):
        out = self.path("unpacked-%d" % len(os.listdir(self.tmp)))
        subprocess.run(["umoci", "unpack", "--image", layout_ref, out], check=True,
                       capture_output=True)
        rootfs = os.path.join(out, "rootfs")
        with open(os.path.join(rootfs, "etc/hello")) as f:
            hello = f.read()
        return hello, os.path.exists(os.path.join(rootfs, "usr/share/doc/x"))

    def assert_nothing_beside(self, name):
        debris = [n for n in os.listdir(self.tmp) if n.startswith("." + name)]
        self.assertEqual(debris, [])

    def test_oci_dir_is_the_chosen_entry_for_skopeo_and_umoci(self):
        self.pull("oci:" + self.path("lay") + ":mytag")
        doc = self.skopeo_inspect("oci:%s:mytag" % self.path("lay"))
        self.assertEqual(doc["Digest"], self.arm["digest"])
        self.assertEqual(doc["Architecture"], "arm64")
        self.assertEqual([l for l in doc["Layers"]], [l["digest"] for l in self.arm["layers"]])
        raw = self.skopeo_inspect("oci:%s:mytag" % self.path("lay"), "--raw")
        self.assertEqual(raw.encode(), self.arm["manifest"])
        self.assertEqual(self.umoci_files(self.path("lay") + ":mytag"), ("arm64\n", True))
        # skopeo copies out of it with the digests unchanged.
        subprocess.run(["skopeo", "copy", "-q", "oci:%s:mytag" % self.path("lay"),
                        "oci:%s:again" % self.path("copy")], check=True)
        self.assertEqual(self.skopeo_inspect("oci:%s:again" % self.path("copy"))["Digest"],
                         self.arm["digest"])
        self.assert_nothing_beside("lay")

    def test_oci_dir_tag_defaults_to_the_image_tag_and_docker_prefix(self):
        self.pull("oci:lay2", image="docker://" + self.ref)
        with open(self.path("lay2", "index.json")) as f:
            index = json.load(f)
        self.assertEqual(len(index["manifests"]), 1)
        m = index["manifests"][0]
        self.assertEqual(m["annotations"]["org.opencontainers.image.ref.name"], "v1")
        self.assertEqual(m["platform"], {"os": "linux", "architecture": "arm64",
                                         "variant": "v8"})
        self.assertEqual(self.skopeo_inspect("oci:%s:v1" % self.path("lay2"))["Digest"],
                         self.arm["digest"])

    def test_oci_archive_reads_back(self):
        self.pull("oci-archive:" + self.path("img.tar") + ":t2")
        doc = self.skopeo_inspect("oci-archive:%s:t2" % self.path("img.tar"))
        self.assertEqual(doc["Digest"], self.arm["digest"])
        with tarfile.open(self.path("img.tar")) as t:
            names = set(t.getnames())
        self.assertIn("oci-layout", names)
        self.assertIn("blobs/sha256/" + self.arm["config_digest"].split(":")[1], names)
        # umoci reads it once unpacked, as Apptainer's oci-archive: does.
        os.mkdir(self.path("x"))
        subprocess.run(["tar", "-xf", self.path("img.tar"), "-C", self.path("x")], check=True)
        self.assertEqual(self.umoci_files(self.path("x") + ":t2"), ("arm64\n", True))
        self.assert_nothing_beside("img.tar")

    def test_docker_archive_for_docker_load(self):
        self.pull("docker-archive:" + self.path("d.tar"))
        with tarfile.open(self.path("d.tar")) as t:
            manifest = json.load(t.extractfile("manifest.json"))
        self.assertEqual(manifest[0]["RepoTags"], [self.ref])
        raw = json.loads(self.skopeo_inspect("docker-archive:" + self.path("d.tar"), "--raw"))
        self.assertEqual(raw["config"]["digest"], self.arm["config_digest"])
        self.assertEqual([l["digest"] for l in raw["layers"]],
                         [l["diff_id"] for l in self.arm["layers"]])
        subprocess.run(["skopeo", "copy", "-q", "docker-archive:" + self.path("d.tar"),
                        "oci:%s:d" % self.path("fromdocker")], check=True)
        self.assertEqual(self.umoci_files(self.path("fromdocker") + ":d"), ("arm64\n", True))
        # A name given after the file is the archive's tag.
        self.pull("docker-archive:" + self.path("e.tar") + ":site/tool:1.0")
        with tarfile.open(self.path("e.tar")) as t:
            manifest = json.load(t.extractfile("manifest.json"))
        self.assertEqual(manifest[0]["RepoTags"], ["docker.io/site/tool:1.0"])

    def test_existing_layout_needs_force(self):
        # A tag the layout has needs --force; a new one is added (issue 43.5,
        # test_first_hour_outputs covers the rest).
        self.pull("oci:" + self.path("lay") + ":a")
        cp = self.pull("oci:" + self.path("lay") + ":a", check=1)
        self.assertIn("--force", fpull.error_line(cp.stderr))
        self.pull("oci:" + self.path("lay") + ":b")
        self.pull("oci:" + self.path("lay") + ":a", "--force")
        self.assertEqual(self.skopeo_inspect("oci:%s:b" % self.path("lay"))["Digest"],
                         self.arm["digest"])
        self.assert_nothing_beside("lay")
        cp = self.pull("oci-archive:" + self.path("lay"), check=1)
        self.assertIn("not a regular file", fpull.error_line(cp.stderr))

    def test_other_word_colon_dest_is_refused_with_the_list(self):
        for dest in ("oci:", "dir:" + self.path("d"), "containers-storage:x", "OCI:x",
                     "docker-daemon:img:t"):
            cp = self.pull(dest, check=2)
            line = fpull.error_line(cp.stderr)
            if dest != "oci:":
                self.assertIn("oci:DIR[:TAG]", line)
                self.assertIn("docker-archive:FILE", line)
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n != "cache"), [])
        # An existing path with a colon stays a path.
        os.mkdir(self.path("a:b"))
        self.pull("a:b", "--force")
        with open(self.path("a:b", "etc/hello")) as f:
            self.assertEqual(f.read(), "arm64\n")
        cp = self.pull("oci:" + self.path("z"), "--format", "squashfs", check=2)
        self.assertIn("--format squashfs", fpull.error_line(cp.stderr))

    def test_other_transports_as_image_are_refused(self):
        for image, why in (("oci:" + self.path("lay"), "registries only"),
                           ("user@%s/lay/img:v1" % self.reg.hostport, "fpull login")):
            cp = self.pull(self.path("out"), image=image, check=2)
            self.assertIn(why, fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(self.path("out")))
