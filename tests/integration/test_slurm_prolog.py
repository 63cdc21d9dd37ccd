"""contrib/slurm/prolog.sh as Slurm's Prolog and Epilog on a real Slurm 22.05
(tests/fixtures/slurm.py), against the real docker-registry: what a job's --comment can
make the root prolog do (issue 20 item 6), and what the job sees when its image could not
be prefetched (issue 21 item 8)."""
import base64
import json
import os
import re

import fpull
import faultproxy
import images
import registry
import slurm
import tokenserver
from test_slurm import DATA_DIR, PROLOG, SlurmCase

# The number of images one job's comment may name (the script's default).
MAX_IMAGES = 4


class PrologScript(SlurmCase):
    def setUp(self):
        super().setUp()
        self.run_dir = os.path.join(self.tmp, "prolog-run")
        self.prolog_log = os.path.join(self.tmp, "prolog.log")
        # Every fpull the prolog starts, one line each: its arguments, NUL-separated.
        self.calls = os.path.join(self.tmp, "calls")
        self.counting = os.path.join(self.tmp, "fpull-counting")
        with open(self.counting, "w") as f:
            f.write('#!/bin/sh\nprintf "%%s\\0" "$@" >>%s\necho >>%s\nexec %s "$@"\n' % (
                self.calls, self.calls, fpull.binary()))
        os.chmod(self.counting, 0o755)

    def start(self, registry_url=None, **settings):
        # Any registry, unless a test says otherwise (the script's default is none).
        env = {"FPULL": self.counting, "FPULL_PROLOG_CACHE": self.cache,
               "FPULL_PROLOG_RUN_DIR": self.run_dir, "FPULL_DATA_DIR": DATA_DIR,
               "FPULL_CONFIG": self.config, "FPULL_PROLOG_LOG": self.prolog_log,
               "FPULL_PROLOG_REGISTRIES": '"*"'}
        env.update(settings)
        env = {k: v for k, v in env.items() if v is not None}
        # Slurm gives the Prolog no environment of ours: a site wrapper sets the settings,
        # and the same wrapper is the Epilog.
        wrapper = os.path.join(self.tmp, "prolog")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n%s exec %s\n" % (
                " ".join("%s=%s" % kv for kv in sorted(env.items())), PROLOG))
        os.chmod(wrapper, 0o755)
        self.cluster = self.start_cluster(prolog=wrapper, epilog=wrapper)

    def job_script(self, image, features="x86-64-v2"):
        # docs/cluster.md's job side: on failure, what the prolog recorded for this job.
        return ('d=$(mktemp -d)\n'
                'err=%s/$SLURM_JOB_ID.error\n'
                'stat -c "record: %%U %%a" "$err" 2>/dev/null\n'
                '%s pull -q --offline --cache-dir %s --features %s %s "$d/rootfs" ||\n'
                '  { rc=$?; cat "$err" >&2; rm -rf "$d"; exit $rc; }\n'
                'cat "$d/rootfs/etc/kind"\n'
                'rm -rf "$d"\n' % (self.run_dir, fpull.binary(), self.cache, features, image))

    def run_job(self, comment, script):
        # The prolog prefetches the entry the job's pull will want.
        comment += " fpull-features=x86-64-v2"
        cp, job = self.cluster.sbatch(["--comment", comment], script)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rec = self.cluster.wait(job)
        return job, rec, self.cluster.output(job)

    def prefetch_calls(self):
        """The argument lists of the fpull processes the prolog ran."""
        if not os.path.exists(self.calls):
            return []
        with open(self.calls, "rb") as f:
            return [ln.decode().split("\0") for ln in f.read().split(b"\0\n") if ln]

    def assert_node_idle_and_record_gone(self, job):
        self.assertEqual(self.cluster.settled_node_state(), "idle", self.cluster.node_reason())
        # The Epilog removed the job's record.
        self.assertFalse(os.path.lexists(os.path.join(self.run_dir, "%s.error" % job)))


class PrologComment(PrologScript):
    def test_globs_in_the_comment_are_never_expanded(self):
        # Before the fix: one fpull process as root per matching path (here 6).
        self.start()
        g = os.path.join(self.tmp, "g")
        os.mkdir(g)
        for i in range(6):
            open(os.path.join(g, "f%d" % i), "w").close()
        pattern = g + "/*"
        job, rec, out = self.run_job("fpull-image=" + pattern, self.job_script(pattern))
        calls = self.prefetch_calls()
        self.assertEqual(len(calls), 1, calls)
        self.assertEqual(calls[0][-2:], ["--", pattern])
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assert_node_idle_and_record_gone(job)

    def test_at_most_the_bound_of_images_runs(self):
        self.start()
        names = ["/*/*/*/*/*"] + ["%s/hpc/app:t%d" % (self.reg.hostport, i) for i in range(9)]
        comment = " ".join("fpull-image=" + n for n in names)
        job, rec, out = self.run_job(comment, self.job_script(self.ref))
        calls = self.prefetch_calls()
        self.assertLessEqual(len(calls), MAX_IMAGES, calls)
        self.assertEqual([c[-1] for c in calls], names[:MAX_IMAGES])
        # The glob reached fpull as one literal name (and was refused there).
        self.assertEqual(calls[0][-2:], ["--", "/*/*/*/*/*"])
        # The job is told which ones were left out.
        for n in names[MAX_IMAGES:]:
            self.assertIn("fpull-prolog: %s: not prefetched: more than %d images in the job's "
                          "comment" % (n, MAX_IMAGES), out)
        self.assert_node_idle_and_record_gone(job)

    def test_option_in_the_comment_is_refused(self):
        self.start()
        evil = os.path.join(self.tmp, "evil.yaml")
        with open(evil, "w") as f:
            f.write("detect: true\n")
        job, rec, out = self.run_job(
            "fpull-image=--config=%s fpull-image=-v fpull-features=--config=%s fpull-image=%s"
            % (evil, evil, self.ref), self.job_script(self.ref))
        calls = self.prefetch_calls()
        # Only the real image was prefetched, after "--", with no option of the user's.
        self.assertEqual(len(calls), 1, calls)
        self.assertEqual(calls[0][-2:], ["--", self.ref])
        for arg in calls[0]:
            self.assertNotIn(evil, arg)
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertIn("v2\n", out)
        self.assert_node_idle_and_record_gone(job)
        with open(self.prolog_log) as f:
            log = f.read()
        self.assertIn("fpull-image=--config=%s: refused" % evil, log)
        self.assertIn("fpull-image=-v: refused", log)
        self.assertIn("fpull-features=--config=%s: refused" % evil, log)

    def test_registry_not_in_the_sites_list_is_refused(self):
        self.start(FPULL_PROLOG_REGISTRIES='"registry.example.org docker.io"')
        job, rec, out = self.run_job("fpull-image=" + self.ref, self.job_script(self.ref))
        self.assertEqual(self.prefetch_calls(), [])
        self.assertIn("fpull-prolog: %s: not prefetched: registry %s is not in the site's "
                      "list (registry.example.org docker.io)" % (self.ref, self.reg.hostport),
                      out)
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assert_node_idle_and_record_gone(job)
        # The same registry, listed: prefetched.
        self.cluster.stop()
        self.start(FPULL_PROLOG_REGISTRIES='"docker.io %s"' % self.reg.hostport)
        job, rec, out = self.run_job("fpull-image=" + self.ref, self.job_script(self.ref))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(len(self.prefetch_calls()), 1)


class PrologErrors(PrologScript):
    def test_job_sees_the_real_error(self):
        # Before the fix the job saw only its own "not in the cache" (exit 5), whatever the
        # registry said to the prolog.
        self.start()
        bad = "%s/hpc/app:nope" % self.reg.hostport
        job, rec, out = self.run_job("fpull-image=" + bad, self.job_script(bad))
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertEqual(rec["ExitCode"], "5:0", out)
        # The record was the job user's, readable by that user only.
        self.assertIn("record: nobody 600\n", out)
        self.assertRegex(out, r"(?m)^fpull-prolog: %s: exit 5: fpull: .*manifest nope not "
                              r"found in .*\(MANIFEST_UNKNOWN\)$" % re.escape(bad))
        self.assert_node_idle_and_record_gone(job)

    def test_slow_registry_cannot_hold_the_node(self):
        # A registry that trickles: the prolog gives up at its deadline, the job is told,
        # the node is never drained for a prolog past PrologEpilogTimeout.
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/", trickle=(1, 2.0))
        self.start(FPULL_PROLOG_TIMEOUT="3")
        slow = "%s/hpc/app:1.0" % proxy.hostport
        job, rec, out = self.run_job("fpull-image=" + slow, self.job_script(slow))
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertIn("fpull-prolog: %s: not prefetched: the prolog's 3 s "
                      "(FPULL_PROLOG_TIMEOUT) ran out" % slow, out)
        self.assert_node_idle_and_record_gone(job)

    def test_private_image_never_reaches_the_shared_cache(self):
        # A site wrapper that exports DOCKER_CONFIG with root's credentials: before the fix
        # the prolog fetched the private image into the 0755 cache, for every user to read.
        ts = tokenserver.TokenServer(users={"alice": "Pr1vate-pw"}).start()
        self.addCleanup(ts.stop)
        reg = registry.Registry(auth=ts.registry_auth()).start()
        self.addCleanup(reg.stop)
        client = images.Client(reg.url, username="alice", password="Pr1vate-pw")
        img = images.push_image(client, "team/secret", "v1",
                                [[{"path": "etc/kind", "data": "secret\n"}]])
        docker = os.path.join(self.tmp, "docker")
        os.mkdir(docker, 0o700)
        with open(os.path.join(docker, "config.json"), "w") as f:
            json.dump({"auths": {reg.hostport: {"auth": base64.b64encode(
                b"alice:Pr1vate-pw").decode()}}}, f)
        self.start(DOCKER_CONFIG=docker)
        ref = "%s/team/secret:v1" % reg.hostport
        job, rec, out = self.run_job("fpull-image=" + ref, self.job_script(ref))
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertRegex(out, r"(?m)^fpull-prolog: %s: exit 4: fpull: " % re.escape(ref))
        for d in [img["digest"], img["config_digest"]] + [l["digest"] for l in img["layers"]]:
            self.assertFalse(os.path.exists(os.path.join(self.cache, "blobs", "sha256",
                                                         d.split(":")[1])), d)
        self.assert_node_idle_and_record_gone(job)

    def test_no_record_when_all_went_well(self):
        self.start()
        job, rec, out = self.run_job("fpull-image=" + self.ref, self.job_script(self.ref))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assertEqual(out, "v2\n")
        # Nothing to say: no record, not even the directory for it.
        self.assertFalse(os.path.lexists(self.run_dir))


class PrologBounds(PrologScript):
    """Review 4 (issue 39, MEDIUM 4): what a job's comment can make the root prolog write:
    only from registries the site lists, at most FPULL_PROLOG_MAX_BYTES per job, never
    below FPULL_PROLOG_MIN_FREE for users; the Epilog prunes to FPULL_PROLOG_CACHE_MAX."""

    def big(self, size=3 << 20):
        img = images.push_image(self.client, "hpc/big", "1.0",
                                [[{"path": "data/blob", "data": os.urandom(size)}]])
        return "%s/hpc/big:1.0" % self.reg.hostport, img

    def cached(self, img):
        return os.path.exists(os.path.join(self.cache, "blobs", "sha256",
                                           img["layers"][0]["digest"].split(":")[1]))

    def test_a_comment_prefetches_nothing_until_the_site_lists_registries(self):
        self.start(FPULL_PROLOG_REGISTRIES=None)
        job, rec, out = self.run_job("fpull-image=" + self.ref, self.job_script(self.ref))
        self.assertEqual(self.prefetch_calls(), [])
        self.assertIn("fpull-prolog: %s: not prefetched: the site lists no registry a job's "
                      "comment may name (FPULL_PROLOG_REGISTRIES)" % self.ref, out)
        self.assertEqual(rec["JobState"], "FAILED", out)
        self.assertFalse(os.path.exists(os.path.join(self.cache, "blobs")))
        self.assert_node_idle_and_record_gone(job)

    def test_a_jobs_prefetches_are_bounded_in_bytes(self):
        # Before the fix: 1 GiB from the user's own registry in 2 s, kept after the job.
        ref, img = self.big(8 << 20)
        self.start(FPULL_PROLOG_MAX_BYTES="1M")
        job, rec, out = self.run_job("fpull-image=" + ref, self.job_script(ref))
        self.assertIn("fpull-prolog: %s: not prefetched: the job's prefetches may add at most "
                      "1048576 bytes (FPULL_PROLOG_MAX_BYTES)" % ref, out)
        self.assertFalse(self.cached(img))
        partial = [f for r, _, fs in os.walk(os.path.join(self.cache, "tmp")) for f in fs
                   if f.endswith(".partial")]
        self.assertEqual(partial, [])
        self.assert_node_idle_and_record_gone(job)

    def test_the_prolog_never_writes_below_the_free_space_floor(self):
        ref, img = self.big()
        self.start(FPULL_PROLOG_MIN_FREE="1000000T")
        job, rec, out = self.run_job("fpull-image=" + ref, self.job_script(ref))
        self.assertEqual(self.prefetch_calls(), [])
        self.assertIn("fpull-prolog: %s: not prefetched: less than %d bytes free for users on "
                      "the cache's file system (FPULL_PROLOG_MIN_FREE)"
                      % (ref, 1000000 << 40), out)
        self.assertFalse(self.cached(img))
        self.assert_node_idle_and_record_gone(job)

    def test_the_epilog_prunes_the_cache_to_its_size(self):
        ref, img = self.big()
        self.start(FPULL_PROLOG_CACHE_MAX="1M")
        job, rec, out = self.run_job("fpull-image=" + ref, self.job_script(ref))
        self.assertEqual(rec["JobState"], "COMPLETED", out + self.cluster.logs())
        self.assert_node_idle_and_record_gone(job)
        self.assertFalse(self.cached(img))
