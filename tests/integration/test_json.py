"""--json shapes (contract v3, "JSON results"): prefetch's array keeps one object per
IMAGE, failures included; pull gives the one object the man page describes; inspect
names the reason of every entry that does not fit in a field of its own."""
import os
import re

import cases
import fpull
import images

SRC = os.environ["FPULL_SRC_DIR"]
MAN = os.path.join(SRC, "man", "fpull.1")


def man_json_section():
    with open(MAN) as f:
        text = f.read().replace("\\-", "-")
    return text[text.index(".SH JSON OUTPUT"):text.index(".SH EXIT STATUS")]


def layer(name):
    return [{"path": name, "type": "file", "data": name + "\n"}]


class Json(cases.RegistryCase):
    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.good = images.push_image(self.client, "j/good", "1", [layer("good")])

    def ref(self, repo, tag="1"):
        return "%s/%s:%s" % (self.reg.hostport, repo, tag)

    def test_prefetch_array_keeps_failed_images_in_order(self):
        cp, doc = fpull.run_json(["prefetch", "--cache-dir", self.cache, self.ref("j/bad"),
                                  self.ref("j/good"), "Upper/Case:1"], check=5)
        self.assertIsInstance(doc, list)
        self.assertEqual([d["reference"] for d in doc],
                         [self.ref("j/bad"), self.ref("j/good"), "Upper/Case:1"])
        self.assertEqual(doc[0]["error"]["code"], 5)
        self.assertIn("j/bad", doc[0]["error"]["message"])
        self.assertNotIn("manifest_digest", doc[0])
        self.assertEqual(doc[1]["manifest_digest"], self.good["digest"])
        self.assertNotIn("error", doc[1])
        self.assertEqual(doc[2]["error"]["code"], 2)  # a bad reference: usage
        # The exit code and the one failure line are the first failure's.
        self.assertIn("j/bad", fpull.error_line(cp.stderr))
        self.assertTrue(os.path.isdir(os.path.join(self.cache, "blobs")))

    def test_prefetch_array_when_all_fail(self):
        cp, doc = fpull.run_json(["prefetch", "--cache-dir", self.cache, "BAD"], check=2)
        self.assertEqual(doc, [{"reference": "BAD", "error": {
            "code": 2, "message": doc[0]["error"]["message"]}}])
        self.assertTrue(doc[0]["error"]["message"])

    def test_pull_json_is_the_object_the_man_page_describes(self):
        sec = man_json_section()
        # The man page says pull gives one object and prefetch an array, as contract v3.
        self.assertRegex(sec, r"\.B pull\n\(one object\)")
        self.assertRegex(sec, r"\.B prefetch\n\(an array")
        pull_keys = re.findall(r"^\.BR? (\w+)", sec[:sec.index(".PP")], re.M)
        pull_keys = [k for k in pull_keys if k not in ("pull", "prefetch")]
        _, doc = fpull.run_json(["pull", "--cache-dir", self.cache, self.ref("j/good"),
                                 os.path.join(self.tmp, "root")])
        self.assertIsInstance(doc, dict)
        self.assertEqual(sorted(doc), sorted(set(pull_keys)))
        self.assertEqual(sorted(doc["platform"]), ["architecture", "features", "os", "variant"])
        # The failure object of prefetch is documented too.
        self.assertIn("error", sec)
        self.assertRegex(sec, r"code.*message")

    def test_pull_json_failure_is_an_error_object(self):
        # Issue 23: pull --json printed nothing on failure; now the shape of prefetch's
        # failed entries, with the exit code and the one failure line unchanged.
        dest = os.path.join(self.tmp, "root")
        cp, doc = fpull.run_json(["pull", "--cache-dir", self.cache, self.ref("j/absent"),
                                  dest], check=5)
        self.assertEqual(doc, {"reference": self.ref("j/absent"), "error": {
            "code": 5, "message": fpull.error_line(cp.stderr)[len("fpull: "):]}})
        self.assertIn("j/absent", doc["error"]["message"])
        self.assertFalse(os.path.lexists(dest))
        # The same object as prefetch gives for the same image.
        _, pre = fpull.run_json(["prefetch", "--cache-dir", self.cache, self.ref("j/absent")],
                                check=5)
        self.assertEqual(pre, [doc])
        # Another code, and a reference that does not parse (kept as given, exit 2).
        cp, doc = fpull.run_json(["pull", "--platform", "linux/arm64", "--cache-dir",
                                  self.cache, self.ref("j/good"), dest], check=3)
        self.assertEqual(sorted(doc), ["error", "reference"])
        self.assertEqual(doc["error"]["code"], 3)
        cp, doc = fpull.run_json(["pull", "Upper/Case:1", dest], check=2)
        self.assertEqual(doc["reference"], "Upper/Case:1")
        self.assertEqual(doc["error"]["code"], 2)
        self.assertEqual(doc["error"]["message"], fpull.error_line(cp.stderr)[len("fpull: "):])

    def test_inspect_reason_for_every_entry_that_does_not_fit(self):
        plat = {"os": "linux", "architecture": "amd64"}
        imgs = [images.push_image(self.client, "j/multi", None, [layer("e%d" % i)])
                for i in range(5)]
        images.push_index(self.client, "j/multi", "1", [
            (imgs[0], {"os": "linux", "architecture": "arm64"}),
            (imgs[1], {"os": "windows", "architecture": "amd64"}),
            (imgs[2], dict(plat, variant="v4")),
            (imgs[3], dict(plat, features=["avx512f"])),
            (imgs[4], dict(plat)),
        ])
        _, doc = fpull.run_json(["inspect", "--platform", "linux/amd64/v2", self.ref("j/multi")])
        reasons = [e["reason"] for e in doc["entries"]]
        self.assertIn("architecture arm64", reasons[0])
        self.assertIn("os windows", reasons[1])
        self.assertIn("variant v4", reasons[2])
        self.assertIn("avx512f", reasons[3])
        self.assertIsNone(reasons[4])
        self.assertEqual([e["eligible"] for e in doc["entries"]], [False] * 4 + [True])

    def test_inspect_reason_for_a_single_platform_mismatch(self):
        arm = images.push_image(self.client, "j/arm", "1", [layer("arm")],
                                architecture="arm64", variant="v8")
        cp, doc = fpull.run_json(["inspect", "--platform", "linux/amd64", self.ref("j/arm")],
                                 check=3)
        (entry,) = doc["entries"]
        self.assertFalse(entry["eligible"])
        self.assertEqual(entry["missing"], [])
        self.assertIn("architecture arm64", entry["reason"])
        self.assertIsNone(doc["chosen"])
