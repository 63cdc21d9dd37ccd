"""The bash completion offers the subcommands and each command's real options."""
import os
import shlex
import subprocess
import unittest

import cases
import fpull
import images

SCRIPT = os.path.join(os.environ["FPULL_SRC_DIR"], "scripts", "fpull.bash-completion")


def complete(words, wordbreaks=None, env=None):
    """Runs the completion function for the command line WORDS (last one being completed).
    wordbreaks: COMP_WORDBREAKS as bash sets it (the words must then be split as bash
    splits them)."""
    bindir = os.path.dirname(fpull.binary())
    quoted = " ".join("'%s'" % w for w in words)
    script = ('PATH="%s:$PATH"; source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; %s _fpull; '
              'printf "%%s\\n" "${COMPREPLY[@]}"' % (
                  bindir, SCRIPT, quoted, len(words) - 1,
                  "COMP_WORDBREAKS=%s;" % shlex.quote(wordbreaks) if wordbreaks is not None else ""))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env=fpull.base_env(env))
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return set(r.stdout.split())


class Completion(unittest.TestCase):
    def test_subcommands(self):
        self.assertEqual(complete(["fpull", "p"]), {"pull", "prefetch"})
        self.assertIn("features", complete(["fpull", ""]))

    def test_options_follow_the_option_table(self):
        got = complete(["fpull", "pull", "--"])
        for o in ("--output", "--force", "--features", "--platform", "--json", "--offline"):
            self.assertIn(o, got)
        self.assertNotIn("--type", got)
        self.assertEqual(complete(["fpull", "inspect", "--pl"]), {"--platform"})

    def test_type_values(self):
        self.assertEqual(complete(["fpull", "manifest", "push", "--type", ""]), {"oci", "docker"})

    def test_manifest_inspect_has_no_type(self):
        self.assertIn("--type", complete(["fpull", "manifest", "push", "--"]))
        got = complete(["fpull", "manifest", "inspect", "--"])
        self.assertIn("--insecure", got)
        self.assertNotIn("--type", got)
        cp = fpull.run(["manifest", "inspect", "--type", "oci", "x/y:1"])
        self.assertEqual(cp.returncode, 2)
        self.assertIn("--type", fpull.error_line(cp.stderr))

    def test_help_and_commands(self):
        self.assertEqual(complete(["fpull", "help", "ins"]), {"inspect"})
        self.assertIn("help", complete(["fpull", "h"]))
        self.assertIn("version", complete(["fpull", ""]))

    def test_feature_names(self):
        self.assertEqual(complete(["fpull", "pull", "--features", "broadw"]), {"broadwell"})
        got = complete(["fpull", "inspect", "--features", "haswell,skylake-"])
        self.assertEqual(got, {"haswell,skylake-avx512"})
        self.assertIn("linux/amd64", complete(["fpull", "pull", "--platform", "linux/a"]))
        # One word when COMP_WORDBREAKS has no ":" ...
        got = complete(["fpull", "pull", "--platform", "linux/amd64:haswell:skylake-"],
                       wordbreaks=" \t\n")
        self.assertEqual(got, {"linux/amd64:haswell:skylake-avx512"})
        # ... and split at ":" the way bash does by default, which inserts only the part
        # after the last ":".
        got = complete(["fpull", "pull", "--platform", "linux/amd64", ":", "haswell", ":",
                        "skylake-"], wordbreaks=" \t\n\"'><=;|&(:")
        self.assertEqual(got, {"skylake-avx512"})
        got = complete(["fpull", "pull", "--platform", "linux/amd64", ":"],
                       wordbreaks=" \t\n\"'><=;|&(:")
        self.assertIn("broadwell", got)
        # Site features come from the config.
        cfg = os.path.join(fpull.private_dir(), "completion-site.yaml")
        with open(cfg, "w") as f:
            f.write("site-features: [infiniband]\n")
        self.assertEqual(complete(["fpull", "pull", "--features", "infini"],
                                  env={"FPULL_CONFIG": cfg}), {"infiniband"})


    def test_cache_subcommands_and_their_options(self):
        self.assertEqual(complete(["fpull", "ca"]), {"cache"})
        self.assertEqual(complete(["fpull", "cache", ""]), {"ls", "du", "prune", "rm"})
        got = complete(["fpull", "cache", "prune", "--"])
        for o in ("--older-than", "--max-size", "--all", "--json", "--cache-dir"):
            self.assertIn(o, got)
        got = complete(["fpull", "cache", "ls", "--"])
        self.assertIn("--json", got)
        self.assertNotIn("--max-size", got)
        self.assertNotIn("--all", got)
        self.assertIn("7d", complete(["fpull", "cache", "prune", "--older-than", ""]))
        self.assertEqual(complete(["fpull", "cache", "prune", "--max-size", "10"]), {"10G"})

    def test_format_values_and_config_command(self):
        self.assertEqual(complete(["fpull", "pull", "--format", ""]),
                         {"dir", "bundle", "squashfs"})
        self.assertEqual(complete(["fpull", "con"]), {"config"})
        self.assertIn("--all", complete(["fpull", "prefetch", "--"]))


class CompletionFromCache(cases.RegistryCase):
    def test_image_arguments_from_the_cache(self):
        img = images.push_image(self.client, "team/tool", "1.0", [[{"path": "a", "data": "a"}]])
        ref = "%s/team/tool:1.0" % self.reg.hostport
        cache = os.path.join(self.tmp, "cache")
        fpull.run(["prefetch", ref], env={"FPULL_CACHE": cache}, check=0)
        env = {"FPULL_CACHE": cache}
        self.assertIn(ref, complete(["fpull", "pull", ""], env=env))
        self.assertIn(ref, complete(["fpull", "inspect", ref[:-3]], env=env))
        self.assertIn(ref, complete(["fpull", ""], env=env))  # the "fpull IMAGE" shorthand
        self.assertNotIn(ref, complete(["fpull", "pull", ""]))  # another cache
        self.assertIn(ref, complete(["fpull", "pull", "--cache-dir", cache, ""]))
        self.assertIn(ref, complete(["fpull", "cache", "rm", ""], env=env))
        self.assertTrue(img["digest"])
