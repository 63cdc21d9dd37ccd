"""What docker users type (issue 23, contract v4): other tools' command words are refused
as commands (exit 2) with what fpull offers instead, and never reach a registry; inspect
says the same as pull when nothing fits."""
import ast
import os
import re
import unittest

import cases
import fpull
import images

# Each word, and what the refusal must name instead.
FOREIGN = {
    "images": "fpull cache ls", "ls": "fpull cache ls", "list": "fpull cache ls",
    "rm": "fpull cache rm", "rmi": "fpull cache rm",
    "run": "fpull pull --format bundle", "exec": "fpull pull --format bundle",
    "ps": "fpull cache ls", "search": "fpull inspect", "info": "fpull features",
    "tag": "fpull manifest push", "push": "fpull manifest push",
    "build": "fpull manifest push",
}


def layer(name):
    return [{"path": name, "type": "file", "data": name + "\n"}]


class ForeignWords(cases.RegistryCase):
    tmp_prefix = "fpull-words-"

    def setUp(self):
        super().setUp()
        # The local registry mirrors docker.io, so a word taken for docker.io/library/WORD
        # would show up in its log (and pull, as `fpull pull WORD` does below).
        cfg = os.path.join(self.tmp, "..", os.path.basename(self.tmp) + ".yaml")
        with open(cfg, "w") as f:
            f.write('registry-mirrors:\n  docker.io: ["%s"]\n' % self.reg.url)
        self.addCleanup(os.unlink, cfg)
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "..", os.path.basename(self.tmp) +
                                                "-cache"),
                    "FPULL_CONFIG": cfg}
        self.addCleanup(fpull.rmtree, self.env["FPULL_CACHE"])
        # An image of every such name exists: refused all the same.
        for word in FOREIGN:
            images.push_image(self.client, "library/" + word, "latest", [layer(word)])

    def requests(self):
        return self.reg.log().count("/v2/")

    def test_each_word_is_refused_without_a_request(self):
        before = self.requests()
        for word, instead in sorted(FOREIGN.items()):
            for argv in ([word], [word, "x"], [word, "--json", "x"]):
                cp = fpull.run(argv, env=self.env, cwd=self.tmp)
                self.assertEqual(cp.returncode, 2, (argv, cp.stderr))
                line = fpull.error_line(cp.stderr)
                self.assertIn("unknown command '%s'" % word, line)
                self.assertIn("'%s" % instead, line)
                self.assertIn("use 'fpull pull %s'" % word, line)
                self.assertEqual(cp.stdout, "")
            self.assertEqual(os.listdir(self.tmp), [], word)
        self.assertEqual(self.requests(), before, "a refused word must not reach the registry")

    def test_full_reference_and_pull_still_pull(self):
        for word in ("images", "push", "ls"):
            # Written as a full reference, it is the fpull IMAGE shorthand.
            for ref in ("%s/library/%s:latest" % (self.reg.hostport, word), word + ":latest",
                        "library/" + word):
                dest = os.path.join(self.tmp, ref.replace("/", "_").replace(":", "_"))
                fpull.run([ref, dest], env=self.env, check=0)
                with open(os.path.join(dest, word)) as f:
                    self.assertEqual(f.read(), word + "\n")
        # The way the message names: fpull pull NAME, docker.io/library/NAME (through the
        # mirror).
        for word in FOREIGN:
            dest = os.path.join(self.tmp, "p-" + word)
            fpull.run(["pull", word, dest], env=self.env, check=0)
            with open(os.path.join(dest, word)) as f:
                self.assertEqual(f.read(), word + "\n")


class SameNoFitMessage(cases.RegistryCase):
    """pull and inspect fail with the same line when nothing fits (exit 3)."""

    tmp_prefix = "fpull-nofit-"

    def both(self, ref, platform):
        dest = os.path.join(self.tmp, "out")
        cache = ["--cache-dir", os.path.join(self.tmp, "cache")]
        pull = fpull.run(["pull", "--platform", platform] + cache + [ref, dest])
        self.assertEqual(pull.returncode, 3, pull.stderr)
        self.assertFalse(os.path.lexists(dest))
        insp = fpull.run(["inspect", "--platform", platform] + cache + [ref])
        self.assertEqual(insp.returncode, 3, insp.stderr)
        ijson, _ = fpull.run_json(["inspect", "--platform", platform] + cache + [ref], check=3)
        self.assertEqual(fpull.error_line(insp.stderr), fpull.error_line(pull.stderr))
        self.assertEqual(fpull.error_line(ijson.stderr), fpull.error_line(pull.stderr))
        return fpull.error_line(pull.stderr)

    def test_index_names_the_closest_entry(self):
        a = images.push_image(self.client, "nf/idx", None, [layer("a")])
        b = images.push_image(self.client, "nf/idx", None, [layer("b")])
        arm = images.push_image(self.client, "nf/idx", None, [layer("c")], architecture="arm64")
        images.push_index(self.client, "nf/idx", "1", [
            (arm, {"os": "linux", "architecture": "arm64", "features": ["avx2"]}),
            (a, {"os": "linux", "architecture": "amd64", "features": ["avx512f", "avx2"]}),
            (b, {"os": "linux", "architecture": "amd64", "features": ["avx512f"]}),
        ])
        # linux/amd64/v1: this host's detected features above the baseline stay out (issue
        # 33: a bare --platform on the host's architecture keeps them).
        line = self.both("%s/nf/idx:1" % self.reg.hostport, "linux/amd64/v1")
        self.assertIn("nf/idx:1: no entry of the index fits linux/amd64/v1; ", line)
        self.assertIn("closest is %s, which needs avx512f" % b["digest"], line)

    def test_index_with_nothing_close(self):
        arm = images.push_image(self.client, "nf/far", None, [layer("c")], architecture="arm64")
        images.push_index(self.client, "nf/far", "1", [
            (arm, {"os": "linux", "architecture": "arm64"})])
        line = self.both("%s/nf/far:1" % self.reg.hostport, "linux/amd64/v1")
        self.assertIn("no entry of the index fits linux/amd64/v1 (1 entry)", line)

    def test_single_manifest_for_another_architecture(self):
        images.push_image(self.client, "nf/one", "1", [layer("one")], architecture="arm64")
        line = self.both("%s/nf/one:1" % self.reg.hostport, "linux/amd64")
        self.assertIn("the image is for linux/arm64, the target is linux/amd64", line)




class TagRulesDocumented(unittest.TestCase):
    """What gen-cputags leaves out of, or adds to, the tag sets is named in the man page
    (issue 23: LWP was in neither the bdver sets nor the man page's list)."""

    def test_every_rule_of_the_generator_is_in_the_man_page(self):
        src = os.environ["FPULL_SRC_DIR"]
        with open(os.path.join(src, "scripts", "gen-cputags")) as f:
            script = f.read()
        with open(os.path.join(src, "man", "fpull.1")) as f:
            man = f.read().replace("\\-", "-")
        left_out = ast.literal_eval(re.search(r"^LEFT_OUT = (\{.*?\})", script,
                                              re.M | re.S).group(1))
        self.assertIn("lwp", left_out)
        for ext in sorted(left_out):
            self.assertRegex(man, r"\b%s\b" % re.escape(ext.upper()), ext)
        kept = ast.literal_eval(re.search(r"^ARM_NO_MACRO = (\{.*?\})", script,
                                          re.M | re.S).group(1))
        dropped = ast.literal_eval(re.search(r"^ARM_NO_MACRO_LEFT_OUT = (\{.*?\})", script,
                                             re.M | re.S).group(1))
        self.assertIn("pauth", kept)
        for ext in sorted(set(kept.values()) | (dropped - {"memtag"})):
            self.assertRegex(man, r"\b%s\b" % re.escape(ext), ext)


if __name__ == "__main__":
    unittest.main()
