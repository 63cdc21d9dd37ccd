"""Tag-record rollback in a group-writable cache (issue 20.5, contract "Caches shared
between users and nodes"): in the layout docs/cluster.md documents (install -d -m 2775 -g
GROUP), a member moves the owner's tag record (or all of tags/) aside and puts it back
after the owner wrote a newer one; it is still the owner's, with one link and the right
reference. No --offline pull, the owner's or another member's, may then get the old
digest. The owner is root, or an unprivileged member (4242); the attacker is 65534; the
other victim is the other of root and 4242."""
import hashlib
import os
import subprocess
import sys

import cases
import fpull
import images

NOBODY = 65534
OTHER = 4242
GROUP = 4343

RENAME = "import os, sys\ntry:\n    os.rename(sys.argv[1], sys.argv[2])\nexcept OSError as e:\n" \
         "    print(e)\n    sys.exit(1)\n"


def become(uid):
    """A member of GROUP with the umask 002 the group layout asks for (root too)."""
    def fn():
        os.umask(0o002)
        if uid:
            os.setgroups([GROUP])
            os.setgid(GROUP)
            os.setuid(uid)
    return fn


class TagRollback(cases.RegistryCase):
    tmp_prefix = "fpull-rollback-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.fail("needs root to act as group members (scripts/test runs as root)")
        os.chmod(self.tmp, 0o755)
        self.ref = "%s/r/app:v1" % self.reg.hostport
        self.cache = os.path.join(self.tmp, "group-cache")

    def push(self, text):
        return images.push_image(self.client, "r/app", "v1", [
            [{"path": "marker", "type": "file", "data": text + "\n"}]])

    def run_as(self, uid, args, check=0):
        home = os.path.join(self.tmp, "home-%d" % uid)
        if not os.path.isdir(home):
            os.mkdir(home, 0o700)
            os.chown(home, uid, GROUP)
        env = fpull.base_env({"HOME": home, "XDG_CONFIG_HOME": None, "XDG_CACHE_HOME": None,
                              "XDG_RUNTIME_DIR": None, "FPULL_CACHE": None})
        cp = subprocess.run([fpull.binary()] + args + ["--cache-dir", self.cache], env=env,
                            cwd=home, preexec_fn=become(uid),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=120)
        if check is not None:
            self.assertEqual(cp.returncode, check, "uid %d: fpull %s\n%s" % (
                uid, " ".join(args), cp.stderr))
        return cp

    def rename_as_member(self, src, dst):
        """The attacker's move; returns whether the kernel let it happen."""
        return subprocess.run([sys.executable, "-c", RENAME, src, dst],
                              preexec_fn=become(NOBODY)).returncode == 0

    def offline_marker(self, uid):
        dest = os.path.join(self.tmp, "home-%d" % uid, "rootfs-%d" % len(os.listdir(self.tmp)))
        cp = self.run_as(uid, ["pull", "-q", "--offline", self.ref, dest], check=None)
        if cp.returncode != 0:
            return None
        with open(os.path.join(dest, "marker")) as f:
            return f.read().strip()

    def check(self, owner, move, member_first=False):
        os.mkdir(self.cache)
        os.chown(self.cache, owner, GROUP)
        os.chmod(self.cache, 0o2775)
        self.push("old")
        if member_first:
            # The member's pull made the cache's directories: tags/ is the member's.
            self.run_as(NOBODY, ["prefetch", "-q", self.ref])
        self.run_as(owner, ["prefetch", "-q", self.ref])
        # The owner's record: HEX.uUID.json (HEX.json before per-writer records).
        tags = os.path.join(self.cache, "tags")
        hexname = hashlib.sha256(self.ref.encode()).hexdigest()
        mine = [n for n in os.listdir(tags) if n.startswith(hexname)
                and os.stat(os.path.join(tags, n)).st_uid == owner]
        self.assertEqual(len(mine), 1, os.listdir(tags))
        record = os.path.join(tags, mine[0])
        # The member moves the old record (or the whole tags/) aside...
        src = record if move == "record" else tags
        moved = self.rename_as_member(src, src + ".saved")
        # ...the owner resolves the tag again and records the new digest...
        self.push("new")
        self.run_as(owner, ["prefetch", "-q", self.ref])
        # ...and the member puts the old one back over it.
        if moved:
            if move == "tags":
                self.rename_as_member(tags, tags + ".new")
            self.rename_as_member(src + ".saved", src)
        # Neither the owner nor another user (a member, or root) gets the old image.
        for uid in (owner, OTHER if owner == 0 else 0):
            self.assertIn(self.offline_marker(uid), ("new", None), "uid %d got the old image" % uid)
        if not member_first:
            # The owner's own offline pull still works: its record is trusted.
            self.assertEqual(self.offline_marker(owner), "new")

    def test_record_moved_back_as_root_owner(self):
        self.check(0, "record")

    def test_tags_dir_moved_back_as_root_owner(self):
        self.check(0, "tags")

    def test_record_moved_back_as_unprivileged_owner(self):
        self.check(OTHER, "record")

    def test_tags_dir_moved_back_as_unprivileged_owner(self):
        self.check(OTHER, "tags")

    def test_record_moved_back_in_a_members_tags_dir(self):
        self.check(0, "record", member_first=True)
