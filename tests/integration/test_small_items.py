"""Small habits of issue 34.10: 'help pull' shows the IMAGE and DEST syntax, one layer is
'1 layer', and the README shows login, TLS, digest, --platform, the image outputs and both
package builds."""
import os
import re

import cases
import fpull
import images


class SmallItems(cases.RegistryCase):
    tmp_prefix = "fpull-small-"

    def test_help_pull_shows_image_and_dest_syntax(self):
        for args in (["help", "pull"], ["pull", "--help"]):
            cp = fpull.run(args, check=0)
            self.assertIn("[docker://][REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:HEX]",
                          cp.stdout)
            self.assertIn("oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE",
                          cp.stdout)
            for line in cp.stdout.splitlines():
                self.assertLessEqual(len(line), 80, line)

    def test_one_layer_is_singular(self):
        images.push_image(self.client, "s/one", "t", [[{"path": "a", "type": "file",
                                                        "data": "a"}]])
        cp = fpull.run(["pull", "--cache-dir", os.path.join(self.tmp, "c"),
                        "%s/s/one:t" % self.reg.hostport, os.path.join(self.tmp, "r")],
                       check=0)
        self.assertIn(", 1 layer,", cp.stderr)
        self.assertNotIn("1 layers", cp.stderr)

    def test_readme_examples(self):
        with open(os.path.join(fpull.SRC_DIR, "README.md")) as f:
            readme = f.read()
        for needle in ("fpull login -u", "--password-stdin", "--certs-dir", "--cert-dir",
                       "SSL_CERT_FILE=", "@sha256:", "fpull digest", "fpull tags",
                       "--platform linux/arm64", "oci:", "oci-archive:", "docker-archive:",
                       "dpkg-buildpackage -b", "rpmbuild -bb packaging/rpm/fpull.spec"):
            self.assertIn(needle, readme)

    def test_cache_ls_fits_80_columns(self):
        img = images.push_image(self.client, "team/app", "v1", [[{"path": "a", "type": "file",
                                                                 "data": "a"}]])
        cache = os.path.join(self.tmp, "c")
        by_tag = "%s/team/app:v1" % self.reg.hostport
        by_digest = "%s/team/app@%s" % (self.reg.hostport, img["digest"])
        fpull.run(["prefetch", "-q", "--cache-dir", cache, by_tag, by_digest], check=0)
        cp = fpull.run(["cache", "ls", "--cache-dir", cache], check=0)
        rows = cp.stdout.splitlines()
        self.assertEqual(len(rows), 3, cp.stdout)
        for row in rows:
            self.assertLessEqual(len(row), 80, repr(row))
        self.assertIn(by_tag, cp.stdout)
        self.assertRegex(cp.stdout, r"\n%s/team/app@ +%s " % (re.escape(self.reg.hostport),
                                                               img["digest"][7:19]))
        # --json keeps the whole reference.
        cp, doc = fpull.run_json(["cache", "ls", "--json", "--cache-dir", cache])
        self.assertIn(by_digest, [im["reference"] for im in doc["images"]])

    def test_pulling_the_digest_dest_holds_needs_no_force(self):
        img = images.push_image(self.client, "s/same", "t", [[{"path": "a", "type": "file",
                                                              "data": "a"}]])
        other = images.push_image(self.client, "s/same", "u", [[{"path": "b", "type": "file",
                                                                "data": "b"}]])
        cache = os.path.join(self.tmp, "c")
        dest = os.path.join(self.tmp, "r")
        ref = "%s/s/same:t" % self.reg.hostport
        fpull.run(["pull", "-q", "--cache-dir", cache, ref, dest], check=0)
        with open(os.path.join(dest, "a"), "a") as f:
            f.write("kept")
        cp, doc = fpull.run_json(["pull", "--cache-dir", cache, ref, dest])
        self.assertEqual(doc["manifest_digest"], img["digest"])
        self.assertEqual(doc["rootfs"], dest)
        self.assertIn("already holds %s" % img["digest"], cp.stderr)
        # Nothing taken from the cache into DEST, nothing downloaded (issue 43.11).
        self.assertEqual((doc["bytes_downloaded"], doc["bytes_from_cache"]), (0, 0))
        cp = fpull.run(["pull", "--cache-dir", cache, ref, dest], check=0)
        self.assertIn("0 B downloaded, 0 B from cache", cp.stderr)
        with open(os.path.join(dest, "a")) as f:
            self.assertEqual(f.read(), "akept")  # not unpacked again
        # Another digest still needs --force, which unpacks it.
        cp = fpull.run(["pull", "--cache-dir", cache, "%s/s/same:u" % self.reg.hostport, dest],
                       check=1)
        self.assertIn("--force", fpull.error_line(cp.stderr))
        fpull.run(["pull", "-q", "--force", "--cache-dir", cache, ref, dest], check=0)
        with open(os.path.join(dest, "a")) as f:
            self.assertEqual(f.read(), "a")
