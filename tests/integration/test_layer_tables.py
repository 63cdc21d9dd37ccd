"""The layer tables of containerd, moby and umoci (tests/fixtures/layer_cases.py), each
case pulled to a directory and to SquashFS (issue 23): the exit code the table gives, what
exists in the rootfs (the same in both outputs), the rule named when fpull refuses, and
nothing changed outside DEST."""
import hashlib
import os
import posixpath
import stat
import subprocess

import cases
import fpull
import images
import layer_cases
from sqfs_trees import walk_tar, walk_tree, without_config


def entry(e, victim):
    """A layer_cases entry as an images.tar_layer entry, VICTIM made absolute."""
    kind, name = e[0], e[1].replace("VICTIM", victim)
    if kind == "whiteout":
        d, base = posixpath.split(name)
        return {"path": posixpath.join(d, ".wh." + base), "data": b"", "raw_name": True}
    if kind == "opaque":
        return {"path": posixpath.join(name, ".wh..wh..opq"), "data": b"", "raw_name": True}
    out = {"path": name, "type": kind, "raw_name": True}
    if kind == "file":
        out["data"] = e[2]
    elif kind in ("symlink", "hardlink"):
        out["target"] = e[2].replace("VICTIM", victim)
    return out


def snapshot(root, skip):
    """{relpath: what it is} of everything under root but the names in skip."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == root:
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            what = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    what += (f.read(),)
            elif stat.S_ISLNK(st.st_mode):
                what += (os.readlink(p),)
            out[os.path.relpath(p, root)] = what
    return out


class LayerTables(cases.RegistryCase):
    tmp_prefix = "fpull-tables-"
    tools = ("sqfs2tar",)

    def setUp(self):
        super().setUp()
        self.env = {"FPULL_CACHE": os.path.join(self.tmp, "cache")}
        self.victim = os.path.join(self.tmp, "victim")
        os.mkdir(self.victim)
        with open(os.path.join(self.victim, "hello"), "w") as f:
            f.write("hello\n")
        p400 = os.path.join(self.victim, "perm400")
        with open(p400, "w") as f:
            f.write("...")
        os.chmod(p400, 0o400)

    def fix(self, path):
        """An expectation's path relative to DEST (VICTIM is taken inside DEST)."""
        return path.replace("VICTIM", self.victim).lstrip("/").rstrip("/")

    def check_view(self, case, view, links, what):
        label = "%s (%s)" % (case["name"], what)
        for path, data in case.get("files", {}).items():
            a = view.get(self.fix(path))
            self.assertIsNotNone(a, "%s: no %s" % (label, path))
            self.assertEqual(a["kind"], "file", "%s: %s" % (label, path))
            self.assertEqual(a["data"], hashlib.sha256(data.encode()).hexdigest(),
                             "%s: %s" % (label, path))
        for path, target in case.get("symlinks", {}).items():
            a = view.get(self.fix(path))
            self.assertIsNotNone(a, "%s: no %s" % (label, path))
            self.assertEqual((a["kind"], a.get("target")),
                             ("symlink", target.replace("VICTIM", self.victim)),
                             "%s: %s" % (label, path))
        for path in case.get("dirs", []):
            self.assertEqual(view.get(self.fix(path), {}).get("kind"), "dir",
                             "%s: %s" % (label, path))
        for path in case.get("absent", []):
            self.assertNotIn(self.fix(path), view, "%s: %s" % (label, path))
        groups = [set(g) for g in links]
        for same in case.get("same", []):
            want = {self.fix(p) for p in same}
            self.assertTrue(any(want <= g for g in groups),
                            "%s: %s are not one inode (groups %s)" % (label, same, links))
        for a, b in case.get("differ", []):
            pair = {self.fix(a), self.fix(b)}
            self.assertFalse(any(pair <= g for g in groups), "%s: %s, %s" % (label, a, b))

    def run_cases(self, table):
        skip = {"cache", "out", "img.sqsh"}
        for i, case in enumerate(table):
            with self.subTest(case=case["name"]):
                repo = "tables/c%d" % i
                layers = [images.tar_layer([entry(e, self.victim) for e in layer])
                          for layer in case["layers"]]
                images.push_image(self.client, repo, "t", layers, compression=None)
                ref = "%s/%s:t" % (self.reg.hostport, repo)
                before = snapshot(self.tmp, skip)
                dest, img = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "img.sqsh")
                cpd = fpull.run(["pull", ref, dest], env=self.env, cwd=self.tmp)
                cps = fpull.run(["pull", "--format", "squashfs", ref, img], env=self.env,
                                cwd=self.tmp)
                self.assertEqual(snapshot(self.tmp, skip), before,
                                 "%s: something outside DEST changed" % case["name"])
                for cp, what in ((cpd, "dir"), (cps, "squashfs")):
                    self.assertEqual(cp.returncode, case["exit"],
                                     "%s (%s): %s" % (case["name"], what, cp.stderr))
                if case["exit"]:
                    line = fpull.error_line(cpd.stderr)
                    self.assertIn(case["rule"], line, case["name"])
                    self.assertEqual(fpull.error_line(cps.stderr), line, case["name"])
                    self.assertFalse(os.path.lexists(dest), case["name"])
                    self.assertFalse(os.path.lexists(img), case["name"])
                    continue
                tree, tree_links = walk_tree(dest)
                self.check_view(case, tree, tree_links, "dir")
                r = subprocess.run(["sqfs2tar", img], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
                self.assertEqual(r.returncode, 0, r.stderr)
                sq, sq_links = walk_tar(r.stdout)
                self.check_view(case, sq, sq_links, "squashfs")
                # Both outputs hold one tree (the image also its configuration files).
                sq, tree = without_config(sq, tree)
                shape = {k: (v["kind"], v.get("data"), v.get("target")) for k, v in tree.items()}
                self.assertEqual({k: (v["kind"], v.get("data"), v.get("target"))
                                  for k, v in sq.items()}, shape, case["name"])
                self.assertEqual(sq_links, tree_links, case["name"])
                fpull.rmtree(dest)
                os.unlink(img)

    def test_containerd_breakouts(self):
        self.run_cases(layer_cases.CONTAINERD)

    def test_containerd_whiteouts(self):
        self.run_cases(layer_cases.CONTAINERD_WHITEOUTS)

    def test_moby_breakouts(self):
        self.run_cases(layer_cases.MOBY)

    def test_stricter_rules_exit_8_naming_the_rule(self):
        self.run_cases(layer_cases.STRICTER)

    def test_table_is_complete(self):
        # Every case says what must come out; a refusal names its rule.
        names = [c["name"] for c in layer_cases.ALL]
        self.assertEqual(len(names), len(set(names)))
        self.assertGreaterEqual(len(names), 50)
        for c in layer_cases.ALL:
            self.assertIn(c["exit"], (0, 8), c["name"])
            if c["exit"]:
                self.assertTrue(c.get("rule"), c["name"])
            else:
                self.assertTrue(set(c) & {"files", "symlinks", "dirs", "absent", "same"},
                                c["name"])


if __name__ == "__main__":
    import unittest
    unittest.main()
