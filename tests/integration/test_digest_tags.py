"""fpull digest IMAGE (the chosen entry's digest; --index: the index's) and fpull tags
REPOSITORY (every page of tags/list, following the registry's own n and Link), with
--json; crane's and skopeo's other words refused with a pointer instead of being pulled
as docker.io/library/WORD (issue 34.2). Against the real registry."""
import json
import os

import cases
import faultproxy
import fpull
import images

FILES = [{"path": "etc/x", "type": "file", "data": "x\n"}]


class DigestTags(cases.RegistryCase):
    tmp_prefix = "fpull-digest-"

    def setUp(self):
        super().setUp()
        self.amd = images.push_image(self.client, "dt/img", None, [FILES],
                                     architecture="amd64")
        self.arm = images.push_image(self.client, "dt/img", None, [FILES],
                                     architecture="arm64", variant="v8")
        self.index = images.push_index(self.client, "dt/img", "v1", [
            (self.amd, {"os": "linux", "architecture": "amd64"}),
            (self.arm, {"os": "linux", "architecture": "arm64", "variant": "v8"})])
        self.ref = "%s/dt/img:v1" % self.reg.hostport

    def test_digest_of_chosen_entry_and_of_index(self):
        cp = fpull.run(["digest", "--platform", "linux/arm64/v8", self.ref], check=0)
        self.assertEqual(cp.stdout, self.arm["digest"] + "\n")
        cp = fpull.run(["digest", "--platform", "linux/amd64", self.ref], check=0)
        self.assertEqual(cp.stdout, self.amd["digest"] + "\n")
        cp = fpull.run(["digest", "--index", "--platform", "linux/amd64", self.ref], check=0)
        self.assertEqual(cp.stdout, self.index["digest"] + "\n")
        cp, doc = fpull.run_json(["digest", "--platform", "linux/arm64/v8", self.ref])
        self.assertEqual(doc, {"reference": self.ref, "digest": self.arm["digest"],
                               "index_digest": self.index["digest"],
                               "manifest_digest": self.arm["digest"],
                               "platform": {"os": "linux", "architecture": "arm64",
                                            "variant": "v8", "features": []}})
        # A single manifest is its own top document.
        single = images.push_image(self.client, "dt/one", "s", [FILES], architecture="amd64")
        one = "%s/dt/one:s" % self.reg.hostport
        for extra in ([], ["--index"]):
            cp = fpull.run(["digest", "--platform", "linux/amd64"] + extra + [one], check=0)
            self.assertEqual(cp.stdout, single["digest"] + "\n")

    def test_digest_failures(self):
        cp = fpull.run(["digest", "--platform", "linux/s390x", self.ref], check=3)
        self.assertIn("s390x", fpull.error_line(cp.stderr))
        self.assertEqual(cp.stdout, "")
        # --index needs no fitting entry.
        cp = fpull.run(["digest", "--index", "--platform", "linux/s390x", self.ref], check=0)
        self.assertEqual(cp.stdout, self.index["digest"] + "\n")
        cp, doc = fpull.run_json(["digest", "%s/dt/nope:v1" % self.reg.hostport], check=5)
        self.assertEqual(doc["error"]["code"], 5)
        self.assertIn("not found", doc["error"]["message"])

    def test_tags_of_the_real_registry(self):
        names = ["v1"] + ["t%02d" % i for i in range(9)]
        for t in names[1:]:
            images.push_image(self.client, "dt/img", t, [FILES])
        repo = "%s/dt/img" % self.reg.hostport
        cp = fpull.run(["tags", repo], check=0)
        # The registry's order, which need not be sorted.
        self.assertEqual(sorted(cp.stdout.splitlines()), sorted(names))
        cp, doc = fpull.run_json(["tags", repo])
        self.assertEqual(doc["repository"], repo)
        self.assertEqual(sorted(doc["tags"]), sorted(names))

    def test_tags_follows_link_pages(self):
        # Debian's docker-registry (distribution 2.8) ignores n and sends no Link, so the
        # pages of a registry that paginates (distribution 3, Harbor, quay) are canned here.
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        base = "/v2/dt/img/tags/list"
        pages = [(r"\?n=3$", ["a", "b", "c"], base + "?n=3&last=c"),
                 (r"\?n=3&last=c$", ["d", "bad tag!", "e"], proxy.url + base + "?n=3&last=e"),
                 (r"\?n=3&last=e$", ["f"], None)]
        for rx, tags, nxt in pages:
            headers = {"Content-Type": "application/json"}
            if nxt:
                headers["Link"] = '<%s>; rel="next"' % nxt
            proxy.add(base.replace("/", "\\/") + rx, status=200, headers=headers,
                      body=json.dumps({"name": "dt/img", "tags": tags}).encode())
        repo = "%s/dt/img" % proxy.hostport
        cp = fpull.run(["tags", repo], env={"FPULL_TAGS_PAGE_SIZE": "3"}, check=0)
        self.assertEqual(cp.stdout.splitlines(), ["a", "b", "c", "d", "e", "f"])
        self.assertIn("no valid tags", cp.stderr)
        self.assertEqual(proxy.count(r"/tags/list"), 3)
        # A next page on another host is not followed.
        proxy.clear()
        proxy.add(base.replace("/", "\\/") + r"\?n=3$", status=200,
                  headers={"Link": '<http://127.0.0.2:9/v2/dt/img/tags/list?last=c>; '
                                   'rel="next"'},
                  body=json.dumps({"name": "dt/img", "tags": ["a"]}).encode())
        cp = fpull.run(["tags", repo], env={"FPULL_TAGS_PAGE_SIZE": "3"}, check=1)
        self.assertIn("another host", fpull.error_line(cp.stderr))
        self.assertEqual(cp.stdout, "")

    def test_tags_refusals(self):
        cp = fpull.run(["tags", self.ref], check=2)
        self.assertIn("without a tag", fpull.error_line(cp.stderr))
        cp, doc = fpull.run_json(["tags", "%s/dt/nope" % self.reg.hostport], check=5)
        self.assertEqual(doc["error"]["code"], 5)
        cp = fpull.run(["tags", "--offline", "%s/dt/img" % self.reg.hostport], check=2)
        self.assertIn("--offline", fpull.error_line(cp.stderr))

    def test_other_tools_words_are_refused_with_a_pointer(self):
        for word, pointer in (("list-tags", "fpull tags"), ("ls", "fpull tags"),
                              ("catalog", "fpull tags"), ("export", "oci-archive:"),
                              ("save", "docker-archive:"), ("copy", "oci:"),
                              ("load", "docker-archive:")):
            cp = fpull.run([word, "%s/dt/img" % self.reg.hostport], check=2)
            line = fpull.error_line(cp.stderr)
            self.assertIn(pointer, line)
            self.assertIn("unknown command '%s'" % word, line)
