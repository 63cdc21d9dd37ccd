"""fpull cache ls|du|prune|rm (issue 21.7) against the real registry: two images sharing a
layer, last-use stamps set in the past, a pull slowed by the fault proxy while prune runs,
download locks held by another process, bad limits, a cache of another user."""
import fcntl
import hashlib
import os
import subprocess
import time

import cases
import faultproxy
import fpull
import images


layer = images.random_layer


def image_blobs(img):
    """{digest: size} of an image's manifest, config and layers."""
    out = {img["digest"]: img["size"], img["config_digest"]: len(img["config"])}
    for l in img["layers"]:
        out[l["digest"]] = l["size"]
    return out


def name_of(ref):
    return hashlib.sha256(ref.encode()).hexdigest()


class CacheCmd(cases.RegistryCase):
    tmp_prefix = "fpull-cachecmd-"

    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.shared_layer = layer("shared", 60000)
        self.a = images.push_image(self.client, "team/a", "1.0",
                                   [self.shared_layer, layer("a-own")])
        self.b = images.push_image(self.client, "team/b", "1.0",
                                   [self.shared_layer, layer("b-own")])
        self.shared = self.a["layers"][0]["digest"]
        self.assertEqual(self.shared, self.b["layers"][0]["digest"])

    def ref(self, repo, tag="1.0", hostport=None):
        return "%s/%s:%s" % (hostport or self.reg.hostport, repo, tag)

    def fpull(self, args, check=0, **kw):
        return fpull.run(args + ["--cache-dir", self.cache], check=check, **kw)

    def json(self, args, check=0):
        return fpull.run_json(args + ["--json", "--cache-dir", self.cache], check=check)[1]

    def pull(self, ref, dest, check=0, extra=()):
        return self.fpull(["pull", "-q", "-o", os.path.join(self.tmp, dest)] + list(extra) +
                          [ref], check=check)

    def blob_path(self, digest):
        return os.path.join(self.cache, "blobs", "sha256", digest.split(":")[1])

    def has_blob(self, digest):
        return os.path.isfile(self.blob_path(digest))

    def pull_both(self):
        self.pull(self.ref("team/a"), "ra")
        self.pull(self.ref("team/b"), "rb")

    def set_last_use(self, ref, when):
        """Puts the tag record's and the stamp's mtime (the last use) at WHEN."""
        h = name_of(ref)
        for p in (os.path.join(self.cache, "tags", "%s.u%d.json" % (h, os.geteuid())),
                  os.path.join(self.cache, "used", h)):
            self.assertTrue(os.path.isfile(p), p)
            os.utime(p, (when, when))

    def test_ls_lists_both_images_with_sizes(self):
        self.pull_both()
        self.set_last_use(self.ref("team/a"), time.time() - 60)
        doc = self.json(["cache", "ls"])
        self.assertEqual(doc["cache"], self.cache)
        by_ref = {im["reference"]: im for im in doc["images"]}
        self.assertEqual(set(by_ref), {self.ref("team/a"), self.ref("team/b")})
        for img, repo in ((self.a, "team/a"), (self.b, "team/b")):
            im = by_ref[self.ref(repo)]
            self.assertEqual(set(im), {"reference", "digest", "size", "unique_size", "blobs",
                                       "last_used", "in_use"})
            blobs = image_blobs(img)
            self.assertEqual(im["digest"], img["digest"])
            self.assertEqual(im["size"], sum(blobs.values()))
            self.assertEqual(im["blobs"], len(blobs))
            # The shared layer is needed by the other image too: removing one frees the rest.
            self.assertEqual(im["unique_size"], sum(blobs.values()) - blobs[self.shared])
            self.assertRegex(im["last_used"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            self.assertIs(im["in_use"], False)
        # Most recently used first: b was pulled last.
        self.assertEqual(doc["images"][0]["reference"], self.ref("team/b"))
        cp = self.fpull(["cache", "ls"])
        lines = cp.stdout.splitlines()
        self.assertTrue(lines[0].startswith("IMAGE"), cp.stdout)
        self.assertEqual(len(lines), 3, cp.stdout)
        self.assertIn(self.ref("team/a"), cp.stdout)
        self.assertIn(self.a["digest"][7:19], cp.stdout)
        self.assertIn("just now", cp.stdout)
        self.assertIn("1 minute ago", cp.stdout)

    def test_du_sums_each_kind(self):
        self.pull_both()
        doc = self.json(["cache", "du"])
        blobs = dict(image_blobs(self.a), **image_blobs(self.b))
        manifests = {self.a["digest"], self.b["digest"]}
        self.assertEqual(doc["images"], 2)
        self.assertEqual(doc["manifests"], {"count": 2,
                                            "bytes": sum(blobs[d] for d in manifests)})
        self.assertEqual(doc["blobs"], {"count": len(blobs) - 2,
                                        "bytes": sum(v for d, v in blobs.items()
                                                     if d not in manifests)})
        self.assertEqual(doc["unreferenced"], {"count": 0, "bytes": 0})
        self.assertEqual(doc["partials"], {"count": 0, "bytes": 0})
        self.assertEqual(doc["records"]["count"], 4)  # two tag records, two last-use stamps
        self.assertGreater(doc["records"]["bytes"], 0)
        self.assertEqual(doc["total"], sum(blobs.values()) + doc["records"]["bytes"])
        cp = self.fpull(["cache", "du"])
        for kind in ("blobs", "manifests", "partials", "records", "total"):
            self.assertIn(kind, cp.stdout)

    def test_every_writers_record_is_one_image_and_rm_removes_them_all(self):
        """Tag records are per writer (tags/HEX.uUID.json): two writers' records of one
        digest are one image in ls, keep its blobs in prune, and go together in rm."""
        self.pull_both()
        h = name_of(self.ref("team/a"))
        tags = os.path.join(self.cache, "tags")
        mine = os.path.join(tags, "%s.u%d.json" % (h, os.geteuid()))
        other = os.path.join(tags, "%s.u4242.json" % h)
        with open(mine, "rb") as f, open(other, "wb") as g:
            g.write(f.read())
        refs = [im["reference"] for im in self.json(["cache", "ls"])["images"]]
        self.assertEqual(sorted(refs), sorted([self.ref("team/a"), self.ref("team/b")]))
        self.assertEqual(self.json(["cache", "prune"])["blobs_removed"], 0)
        for d in image_blobs(self.a):
            self.assertTrue(self.has_blob(d), d)
        doc = self.json(["cache", "rm", self.ref("team/a")])
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        self.assertFalse(os.path.lexists(mine))
        self.assertFalse(os.path.lexists(other))

    def test_rm_keeps_the_shared_blob_and_the_other_image(self):
        self.pull_both()
        doc = self.json(["cache", "rm", self.ref("team/a")])
        self.assertEqual(set(doc), {"cache", "removed", "in_use", "blobs_removed", "bytes_freed",
                                    "size"})
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        own = {d: s for d, s in image_blobs(self.a).items() if d != self.shared}
        self.assertEqual(doc["blobs_removed"], len(own))
        self.assertEqual(doc["bytes_freed"], sum(own.values()))
        for d in own:
            self.assertFalse(self.has_blob(d), d)
        self.assertTrue(self.has_blob(self.shared))
        for d in image_blobs(self.b):
            self.assertTrue(self.has_blob(d), d)
        self.pull(self.ref("team/b"), "rb2", extra=["--offline"])
        with open(os.path.join(self.tmp, "rb2", "data", "shared"), "rb") as f:
            self.assertEqual(f.read(), self.shared_layer[0]["data"])
        cp = self.pull(self.ref("team/a"), "ra2", check=5, extra=["--offline"])
        self.assertIn("not in the cache", fpull.error_line(cp.stderr))
        self.assertEqual([im["reference"] for im in self.json(["cache", "ls"])["images"]],
                         [self.ref("team/b")])
        cp = self.fpull(["cache", "rm", self.ref("team/a")], check=5)
        self.assertIn("not in the cache", fpull.error_line(cp.stderr))

    def test_rm_by_digest_and_a_pull_by_digest_is_an_image(self):
        ref = "%s/team/a@%s" % (self.reg.hostport, self.a["digest"])
        self.pull(ref, "ra")
        doc = self.json(["cache", "ls"])
        self.assertEqual([(im["reference"], im["digest"]) for im in doc["images"]],
                         [(ref, self.a["digest"])])
        # Its blobs belong to an image: prune without limits leaves them.
        self.assertEqual(self.json(["cache", "prune"])["blobs_removed"], 0)
        doc = self.json(["cache", "rm", ref])
        self.assertEqual(doc["removed"], [ref])
        self.assertEqual(os.listdir(os.path.join(self.cache, "blobs", "sha256")), [])

    def test_prune_older_than(self):
        self.pull_both()
        self.set_last_use(self.ref("team/a"), time.time() - 10 * 86400)
        doc = self.json(["cache", "prune", "--older-than", "7d"])
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        self.assertFalse(self.has_blob(self.a["layers"][1]["digest"]))
        self.assertTrue(self.has_blob(self.shared))
        # A pull counts as use: the stamp moves, and the image is young again.
        self.set_last_use(self.ref("team/b"), time.time() - 10 * 86400)
        self.pull(self.ref("team/b"), "rb2", extra=["--offline"])
        self.assertEqual(self.json(["cache", "prune", "--older-than", "7d"])["removed"], [])
        self.assertTrue(all(self.has_blob(d) for d in image_blobs(self.b)))

    def test_prune_max_size_keeps_the_most_recent(self):
        self.pull_both()
        c = images.push_image(self.client, "team/c", "1.0", [layer("c-own")])
        self.pull(self.ref("team/c"), "rc")
        now = time.time()
        self.set_last_use(self.ref("team/a"), now - 3000)
        self.set_last_use(self.ref("team/b"), now - 2000)
        self.set_last_use(self.ref("team/c"), now - 1000)
        total = self.json(["cache", "du"])["total"]
        a_unique = sum(s for d, s in image_blobs(self.a).items() if d != self.shared)
        # Room for all but a's own blobs: only the least recently used goes.
        limit = total - a_unique
        doc = self.json(["cache", "prune", "--max-size", "%dB" % limit])
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        self.assertLessEqual(doc["size"], limit)
        self.assertEqual(doc["size"], self.json(["cache", "du"])["total"])
        # A limit below what is left removes every image, the least recently used first.
        doc = self.json(["cache", "prune", "--max-size", "1K"])
        self.assertEqual(doc["removed"], [self.ref("team/b"), self.ref("team/c")])
        self.assertEqual(self.json(["cache", "ls"])["images"], [])
        self.assertTrue(c["digest"])

    def test_prune_all_empties_the_cache(self):
        self.pull_both()
        orphan = b"left by a pull that failed"
        with open(self.blob_path(images.sha256_digest(orphan)), "wb") as f:
            f.write(orphan)
        doc = self.json(["cache", "prune", "--all"])
        self.assertEqual(sorted(doc["removed"]), [self.ref("team/a"), self.ref("team/b")])
        self.assertEqual(doc["size"], 0)
        for sub in ("blobs/sha256", "tags"):
            self.assertEqual(os.listdir(os.path.join(self.cache, sub)), [], sub)
        self.assertEqual([n for n in os.listdir(os.path.join(self.cache, "used"))
                          if not n.startswith(".")], [])
        du = self.json(["cache", "du"])
        self.assertEqual((du["total"], du["images"]), (0, 0))
        cp = self.fpull(["cache", "prune", "--all"])
        self.assertIn("freed 0 B", cp.stderr)

    def test_prune_removes_unreferenced_blobs_and_idle_partials(self):
        self.pull_both()
        # The tag moves on: the old manifest and its own blobs are needed by no image.
        new = images.push_image(self.client, "team/a", "1.0", [self.shared_layer, layer("a2")])
        self.pull(self.ref("team/a"), "ra2")
        du = self.json(["cache", "du"])
        old_own = {d: s for d, s in image_blobs(self.a).items() if d != self.shared}
        self.assertEqual(du["unreferenced"], {"count": len(old_own),
                                              "bytes": sum(old_own.values())})
        priv = os.path.join(self.cache, "tmp", "u%d" % os.geteuid())
        idle = os.path.join(priv, "ab" * 32 + ".partial")
        with open(idle, "wb") as f:
            f.write(b"x" * 1000)
        doc = self.json(["cache", "prune"])
        self.assertEqual(doc["removed"], [])
        self.assertEqual(doc["blobs_removed"], len(old_own) + 1)
        self.assertEqual(doc["bytes_freed"], sum(old_own.values()) + 1000)
        self.assertFalse(os.path.exists(idle))
        for d in image_blobs(new):
            self.assertTrue(self.has_blob(d), d)
        self.pull(self.ref("team/a"), "ra3", extra=["--offline"])

    def test_blobs_and_partials_under_a_download_lock_are_kept(self):
        """Another process holds the per-blob locks a download takes (cache_lock.c): prune
        keeps what they guard, and removes it once they are free."""
        self.pull_both()
        orphan = b"a blob some process is writing"
        od = images.sha256_digest(orphan)
        with open(self.blob_path(od), "wb") as f:
            f.write(orphan)
        priv = os.path.join(self.cache, "tmp", "u%d" % os.geteuid())
        partial = os.path.join(priv, "cd" * 32 + ".partial")
        with open(partial, "wb") as f:
            f.write(b"y" * 500)
        locks = os.path.join(self.cache, "locks")
        holder = subprocess.Popen(
            ["python3", "-c", "import fcntl, sys\n"
             "fs = [open(p, 'a+') for p in sys.argv[1:]]\n"
             "for f in fs: fcntl.lockf(f, fcntl.LOCK_EX)\n"
             "print('locked', flush=True)\nsys.stdin.read()\n",
             os.path.join(locks, od.split(":")[1] + ".lock"),
             os.path.join(locks, "cd" * 32 + ".lock")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.kill)
        self.assertEqual(holder.stdout.readline().strip(), "locked")
        doc = self.json(["cache", "prune", "--all"])
        self.assertTrue(self.has_blob(od))
        self.assertTrue(os.path.exists(partial))
        self.assertEqual(sorted(doc["removed"]), [self.ref("team/a"), self.ref("team/b")])
        holder.stdin.close()
        holder.wait(timeout=30)
        doc = self.json(["cache", "prune", "--all"])
        self.assertFalse(self.has_blob(od))
        self.assertFalse(os.path.exists(partial))
        self.assertEqual(doc["blobs_removed"], 2)

    def slow_pull(self, ref, dest):
        """Starts a pull through the fault proxy, in which b's own layer trickles in, and
        waits until the download of that layer is under way (its partial file is there)."""
        want = self.b["layers"][1]["digest"].split(":")[1] + ".partial"
        priv = os.path.join(self.cache, "tmp", "u%d" % os.geteuid())
        p = subprocess.Popen([fpull.binary(), "pull", "-q", "--cache-dir", self.cache, "-o",
                              os.path.join(self.tmp, dest), ref], env=fpull.base_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(os.path.join(priv, want)):
                return p
            time.sleep(0.02)
        self.fail("the slowed pull never started its download: %s" % (p.communicate(),))

    def proxy_slowing(self, digest):
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        proxy.add(r"/blobs/" + digest, trickle=(1024, 0.1))
        return proxy

    def test_a_running_pull_keeps_its_image(self):
        self.pull_both()
        proxy = self.proxy_slowing(self.b["layers"][1]["digest"])
        # b as seen through the proxy is another image name with the same blobs; its own
        # layer is not cached yet, so the pull has to download it.
        self.fpull(["cache", "rm", self.ref("team/b")])
        slow_ref = self.ref("team/b", hostport=proxy.hostport)
        p = self.slow_pull(slow_ref, "rb-slow")
        doc = self.json(["cache", "prune", "--all"])
        self.assertEqual(doc["in_use"], [slow_ref])
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        cp = self.fpull(["cache", "rm", slow_ref], check=1)
        self.assertIn("running", fpull.error_line(cp.stderr))
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        ls = self.json(["cache", "ls"])["images"]
        self.assertEqual([(im["reference"], im["in_use"]) for im in ls], [(slow_ref, False)])
        for d in image_blobs(self.b):
            self.assertTrue(self.has_blob(d), d)

    def test_a_running_pull_by_digest_keeps_every_blob_it_uses(self):
        """A pull by digest records its image only when it is done: until then its blobs,
        the layer it shares with an image being pruned included, are kept by its pins."""
        self.pull(self.ref("team/a"), "ra")
        proxy = self.proxy_slowing(self.b["layers"][1]["digest"])
        slow_ref = "%s/team/b@%s" % (proxy.hostport, self.b["digest"])
        p = self.slow_pull(slow_ref, "rb-slow")
        doc = self.json(["cache", "prune", "--all"])
        self.assertEqual(doc["removed"], [self.ref("team/a")])
        self.assertTrue(self.has_blob(self.shared))
        self.assertTrue(self.has_blob(self.b["digest"]))
        self.assertTrue(self.has_blob(self.b["config_digest"]))
        self.assertFalse(self.has_blob(self.a["layers"][1]["digest"]))
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        with open(os.path.join(self.tmp, "rb-slow", "data", "shared"), "rb") as f:
            self.assertEqual(f.read(), self.shared_layer[0]["data"])
        # Everything it needs is still there: offline, from the cache alone.
        self.pull(slow_ref, "rb-offline", extra=["--offline"])
        self.assertEqual([im["reference"] for im in self.json(["cache", "ls"])["images"]],
                         [slow_ref])

    def test_library_prune_to_a_size(self):
        """fpull_cache_prune with a size limit, from a program with only the public headers
        (what the Slurm plugin calls after each job)."""
        tool = os.path.join(os.environ.get("FPULL_BUILD_DIR", ""), "tests", "fpull-libapi")
        if not os.access(tool, os.X_OK):
            self.fail("fpull-libapi not built: %s" % tool)
        self.pull_both()
        self.set_last_use(self.ref("team/a"), time.time() - 100)
        b_size = sum(image_blobs(self.b).values())
        cp = subprocess.run([tool, "prune", self.cache, "%dB" % (b_size + 4096)],
                            capture_output=True, text=True, env=fpull.base_env())
        self.assertEqual(cp.returncode, 0, cp.stderr)
        lines = cp.stdout.splitlines()
        self.assertEqual(lines[0], "removed " + self.ref("team/a"))
        self.assertLessEqual(int(lines[-1].split()[1]), b_size + 4096)
        self.assertEqual([im["reference"] for im in self.json(["cache", "ls"])["images"]],
                         [self.ref("team/b")])
        cp = subprocess.run([tool, "prune", self.cache, "10gig"], capture_output=True,
                            text=True, env=fpull.base_env())
        self.assertEqual(cp.returncode, 2)
        self.assertIn("did you mean '10G'", cp.stderr)

    def test_bad_limits_exit_2(self):
        for args, hint in ((["--older-than", "7days"], "did you mean '7d'"),
                           (["--older-than", "7"], "did you mean '7d'"),
                           (["--older-than", "12H"], "did you mean '12h'"),
                           (["--older-than", "soon"], "such as 7d"),
                           (["--max-size", "10gig"], "did you mean '10G'"),
                           (["--max-size", "500"], "did you mean '500M'"),
                           (["--max-size", "-1G"], "such as 10G"),
                           (["--max-size", "10X"], "such as 10G"),
                           (["--all", "--max-size", "1G"], "--all")):
            cp = self.fpull(["cache", "prune"] + args, check=2)
            line = fpull.error_line(cp.stderr)
            self.assertIn(hint, line, args)
            self.assertIn(args[-1] if args[0] != "--all" else "--all", line)
        self.assertFalse(os.path.exists(self.cache))  # nothing was touched, not even created
        for args in (["ls", "--older-than", "1d"], ["rm"], ["du", "x"], ["lss"]):
            cp = self.fpull(["cache"] + args, check=2)
            fpull.error_line(cp.stderr)
        self.assertIn("did you mean 'ls'",
                      fpull.error_line(self.fpull(["cache", "lss"], check=2).stderr))
        for ok in ("1d12h", "30m", "2w", "45s"):
            self.fpull(["cache", "prune", "--older-than", ok])
        for ok in ("10G", "500M", "1.5T", "0", "100KiB", "2gb"):
            self.fpull(["cache", "prune", "--max-size", ok])

    def test_only_the_owner_prunes(self):
        if os.geteuid() != 0:
            self.fail("needs root to act as a second user (scripts/test runs as root)")
        self.pull_both()
        for dirpath, dirnames, filenames in os.walk(self.cache):
            for n in dirnames + filenames + [""]:
                os.lchown(os.path.join(dirpath, n), 65534, 65534)
        before = sorted(os.listdir(os.path.join(self.cache, "blobs", "sha256")))
        for args in (["prune", "--all"], ["rm", self.ref("team/a")]):
            cp = self.fpull(["cache"] + args, check=1)
            line = fpull.error_line(cp.stderr)
            self.assertIn("belongs to uid 65534", line)
            self.assertIn("shared cache", line)
        self.assertEqual(sorted(os.listdir(os.path.join(self.cache, "blobs", "sha256"))), before)
        # Looking is fine.
        self.assertEqual(len(self.json(["cache", "ls"])["images"]), 2)

    def test_no_symlink_is_followed(self):
        self.pull_both()
        outside = os.path.join(self.tmp, "outside")
        os.mkdir(outside)
        with open(os.path.join(outside, "keep"), "w") as f:
            f.write("keep")
        # A planted symlink among the blobs and in place of the stamps directory.
        os.symlink(os.path.join(outside, "keep"), self.blob_path("sha256:" + "ee" * 32))
        used = os.path.join(self.cache, "used")
        fpull.rmtree(used)
        os.symlink(outside, used)
        doc = self.json(["cache", "prune", "--all"])
        self.assertEqual(sorted(doc["removed"]), [self.ref("team/a"), self.ref("team/b")])
        self.assertEqual(os.listdir(outside), ["keep"])
        self.assertTrue(os.path.islink(used))
