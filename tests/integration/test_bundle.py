"""pull --format bundle: DEST/rootfs plus a runtime-spec config.json generated from the
image config (issue 13.3), cross-checked against what umoci unpack writes for the same
image, and run with runc. Against the real registry."""
import json
import os
import stat
import subprocess
import time
import uuid

import cases
import faultproxy
import fpull
import images

NOBODY = 65534
PASSWD = "root:x:0:0:root:/root:/bin/sh\napp:x:1234:2345:App:/home/app:/bin/sh\n"
GROUP = "root:x:0:\napp:x:2345:\nextra:x:3456:app,bob\nother:x:4567:app\n"
# Prints what the runtime gave it, so that the test reads args, env, cwd and ids back.
HELLO_C = r'''
#include <stdio.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
  char cwd[512];
  printf("uid=%d gid=%d cwd=%s\n", (int)getuid(), (int)getgid(), getcwd(cwd, sizeof cwd));
  for (int i = 0; i < argc; i++) printf("arg=%s\n", argv[i]);
  for (char **e = environ; *e; e++) printf("env=%s\n", *e);
  return 0;
}
'''


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class Bundle(cases.RegistryCase):
    tmp_prefix = "fpull-bundle-"
    tools = ("umoci", "skopeo", "runc", "gcc")

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.cache = os.path.join(self.tmp, "cache")
        src = os.path.join(self.tmp, "hello.c")
        with open(src, "w") as f:
            f.write(HELLO_C)
        exe = os.path.join(self.tmp, "hello")
        subprocess.run(["gcc", "-static", "-O1", "-o", exe, src], check=True)
        with open(exe, "rb") as f:
            hello = f.read()
        self.layers = [[{"path": "etc/passwd", "type": "file", "data": PASSWD},
                        {"path": "etc/group", "type": "file", "data": GROUP},
                        {"path": "work", "type": "dir", "mode": 0o777},
                        {"path": "hello", "type": "file", "data": hello, "mode": 0o755}]]

    def push(self, user, tag="v1", **extra):
        config = {"Env": ["PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=/usr/local/nvidia/lib64"],
                  "Entrypoint": ["/hello", "from-entrypoint"], "Cmd": ["from-cmd"],
                  "WorkingDir": "/work", "User": user, "Labels": {"site": "hpc"}}
        config.update(extra)
        images.push_image(self.client, "hpc/run", tag, self.layers,
                          config_extra={"config": config})
        return "%s/hpc/run:%s" % (self.reg.hostport, tag)

    def umoci_config(self, ref, rootless=False):
        """config.json as umoci unpack writes it for the same image."""
        layout = os.path.join(self.tmp, "layout-" + uuid.uuid4().hex[:8])
        subprocess.run(["skopeo", "copy", "-q", "--src-tls-verify=false", "docker://" + ref,
                        "oci:%s:img" % layout], check=True)
        out = os.path.join(self.tmp, "umoci-" + uuid.uuid4().hex[:8])
        args = ["umoci", "unpack"] + (["--rootless"] if rootless else []) + [
            "--image", layout + ":img", out]
        if rootless:
            subprocess.run(["chmod", "-R", "a+rX", layout], check=True)
            parent = os.path.join(self.tmp, "nobody-" + uuid.uuid4().hex[:8])
            os.mkdir(parent)
            os.chown(parent, NOBODY, NOBODY)
            out = os.path.join(parent, "b")
            args[-1] = out
            subprocess.run(args, check=True, preexec_fn=as_nobody, capture_output=True,
                           env={"PATH": os.environ["PATH"], "HOME": parent})
        else:
            subprocess.run(args, check=True, capture_output=True)
        with open(os.path.join(out, "config.json")) as f:
            return json.load(f)

    def fpull_bundle(self, ref, dest, check=0):
        return fpull.run(["pull", "-q", "--format", "bundle", "--cache-dir", self.cache, ref,
                          dest], check=check)

    def read_config(self, dest):
        with open(os.path.join(dest, "config.json")) as f:
            return json.load(f)

    def assert_same_process(self, ours, theirs):
        for key in ("args", "env", "cwd", "user"):
            self.assertEqual(ours["process"][key], theirs["process"][key], key)

    def test_config_json_matches_umoci_for_named_and_numeric_users(self):
        for tag, user in (("named", "app"), ("numeric", "1000:1000"), ("group", "app:other"),
                          ("root", "")):
            ref = self.push(user, tag)
            dest = os.path.join(self.tmp, "bundle-" + tag)
            self.fpull_bundle(ref, dest)
            ours = self.read_config(dest)
            self.assert_same_process(ours, self.umoci_config(ref))
            self.assertEqual(ours["root"]["path"], "rootfs")
            self.assertTrue(os.path.isfile(os.path.join(dest, "rootfs", "hello")))
        # The named user's values, spelt out.
        ours = self.read_config(os.path.join(self.tmp, "bundle-named"))
        self.assertEqual(ours["process"]["user"],
                         {"uid": 1234, "gid": 2345, "additionalGids": [3456, 4567]})
        self.assertEqual(ours["process"]["args"], ["/hello", "from-entrypoint", "from-cmd"])
        self.assertIn("LD_LIBRARY_PATH=/usr/local/nvidia/lib64", ours["process"]["env"])
        self.assertIn("HOME=/home/app", ours["process"]["env"])
        # Labels other than org.opencontainers.image.* are no annotations (issue 20).
        self.assertNotIn("site", ours["annotations"])
        self.assertEqual(ours["annotations"]["org.opencontainers.image.architecture"], "amd64")

    def test_bundle_runs_with_runc(self):
        ref = self.push("app")
        dest = os.path.join(self.tmp, "bundle")
        self.fpull_bundle(ref, dest)
        name = "fpull-test-" + uuid.uuid4().hex[:12]
        cp = subprocess.run(["runc", "run", "--bundle", dest, name], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
        subprocess.run(["runc", "delete", "--force", name], capture_output=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        lines = cp.stdout.splitlines()
        self.assertEqual(lines[0], "uid=1234 gid=2345 cwd=/work")
        self.assertEqual([l[4:] for l in lines if l.startswith("arg=")],
                         ["/hello", "from-entrypoint", "from-cmd"])
        env = [l[4:] for l in lines if l.startswith("env=")]
        self.assertIn("LD_LIBRARY_PATH=/usr/local/nvidia/lib64", env)
        self.assertIn("PATH=/usr/bin:/bin", env)

    def test_rootless_bundle_as_nobody_matches_umoci_rootless(self):
        ref = self.push("app")
        home = os.path.join(self.tmp, "home")
        os.mkdir(home)
        os.chown(home, NOBODY, NOBODY)
        dest = os.path.join(home, "bundle")
        env = fpull.base_env({"HOME": home, "XDG_CONFIG_HOME": None, "XDG_CACHE_HOME": None,
                              "XDG_RUNTIME_DIR": None, "FPULL_CACHE": None})
        cp = subprocess.run([fpull.binary(), "pull", "-q", "--format", "bundle", ref, dest],
                            env=env, preexec_fn=as_nobody, capture_output=True, text=True,
                            timeout=60)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        # A rootless bundle holds nothing privileged: open to runtimes run by others.
        self.assertEqual(os.stat(dest).st_mode & 0o7777, 0o755)
        ours = self.read_config(dest)
        theirs = self.umoci_config(ref, rootless=True)
        self.assert_same_process(ours, theirs)
        self.assertEqual(ours["linux"]["uidMappings"],
                         [{"containerID": 0, "hostID": NOBODY, "size": 1}])
        self.assertEqual(ours["linux"]["uidMappings"], theirs["linux"]["uidMappings"])
        types = [n["type"] for n in ours["linux"]["namespaces"]]
        self.assertIn("user", types)
        self.assertNotIn("network", types)

    def test_user_database_is_read_inside_the_rootfs(self):
        # /etc/passwd is an absolute symlink: it means the rootfs's file, never the host's.
        self.layers = [[{"path": "etc/passwd", "type": "symlink", "target": "/etc/site/passwd"},
                        {"path": "etc/site/passwd", "type": "file",
                         "data": "svc:x:77:88:Svc:/srv/svc:/bin/sh\n"},
                        {"path": "etc/group", "type": "symlink",
                         "target": "../../../../../../etc/group"},
                        {"path": "hello", "type": "file", "data": "x", "mode": 0o755}]]
        ref = self.push("svc")
        dest = os.path.join(self.tmp, "bundle")
        self.fpull_bundle(ref, dest)
        proc = self.read_config(dest)["process"]
        # The group link climbs to the rootfs's own /etc/group (itself: a loop), so no
        # host group lists svc.
        self.assertEqual(proc["user"], {"uid": 77, "gid": 88})
        self.assertIn("HOME=/srv/svc", proc["env"])
        # A name only the host knows is not found.
        ref = self.push("root:daemon", "hostonly")
        cp = self.fpull_bundle(ref, os.path.join(self.tmp, "b2"), check=1)
        self.assertIn("daemon", fpull.error_line(cp.stderr))

    def test_unknown_format_is_usage_error_with_suggestion(self):
        dest = os.path.join(self.tmp, "x")
        cp = fpull.run(["pull", "--format", "bundel", "%s/hpc/run:v1" % self.reg.hostport,
                        dest], check=2)
        line = fpull.error_line(cp.stderr)
        self.assertIn("bundel", line)
        self.assertIn("did you mean 'bundle'", line)
        cp = fpull.run(["pull", "--format", "tarball", "x", dest], check=2)
        self.assertNotIn("did you mean", fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(dest))
        with open(self.reg.log_path) as f:
            self.assertNotIn("fpull/", f.read())  # nothing asked of the registry

    def test_dest_rules_and_nothing_left_on_failure(self):
        ref = self.push("app")
        dest = os.path.join(self.tmp, "bundle")
        os.mkdir(dest)
        cp = self.fpull_bundle(ref, dest, check=1)
        self.assertIn("already exists", fpull.error_line(cp.stderr))
        self.assertEqual(os.listdir(dest), [])
        fpull.run(["pull", "-q", "--force", "--format", "bundle", "--cache-dir", self.cache,
                   ref, dest], check=0)
        self.assertEqual(sorted(os.listdir(dest)), ["config.json", "rootfs"])
        # A user the rootfs does not have: exit 1, no bundle, no staging directory.
        bad = self.push("ghost", "ghost")
        dest2 = os.path.join(self.tmp, "ghost")
        cp = self.fpull_bundle(bad, dest2, check=1)
        self.assertIn("ghost", fpull.error_line(cp.stderr))
        self.assertFalse(os.path.exists(dest2))
        self.assertEqual([n for n in os.listdir(self.tmp) if "fpull-bundle" in n], [])
        # What a killed run left beside DEST goes with the next run; a young one (a run
        # that has just created it) stays.
        old = os.path.join(self.tmp, ".bundle.fpull-bundle-Ab12Cd")
        os.makedirs(os.path.join(old, "rootfs", "etc"))
        os.utime(old, (1700000000, 1700000000))
        young = os.path.join(self.tmp, ".bundle.fpull-bundle-Yo0ung")
        os.mkdir(young)
        fpull.run(["pull", "-q", "--force", "--format", "bundle", "--cache-dir", self.cache,
                   ref, dest], check=0)
        self.assertFalse(os.path.exists(old))
        self.assertTrue(os.path.isdir(young))

    def test_root_bundle_stays_private_with_setuid_and_devices(self):
        # Issue 20.1: as root the bundle keeps a setuid-root binary and a 0666 device node;
        # nobody else may reach them, so the bundle directory stays 0700.
        if os.geteuid() != 0:
            self.skipTest("a root bundle needs root")
        self.layers[0] += [
            {"path": "bin/rootsh", "type": "file", "data": "#!/bin/sh\nid\n", "mode": 0o4755,
             "uid": 0, "gid": 0},
            {"path": "dev/sda", "type": "blockdev", "devmajor": 8, "devminor": 0,
             "mode": 0o666}]
        ref = self.push("app", "priv")
        dest = os.path.join(self.tmp, "bundle")
        self.fpull_bundle(ref, dest)
        rootfs = os.path.join(dest, "rootfs")
        # Kept as root (runtimes run the image as built) ...
        st = os.lstat(os.path.join(rootfs, "bin", "rootsh"))
        self.assertEqual((st.st_mode & 0o7777, st.st_uid), (0o4755, 0))
        st = os.lstat(os.path.join(rootfs, "dev", "sda"))
        self.assertTrue(stat.S_ISBLK(st.st_mode))
        self.assertEqual(st.st_mode & 0o7777, 0o666)
        # ... and out of every other user's reach.
        self.assertEqual(os.stat(dest).st_mode & 0o7777, 0o700)
        self.assertEqual(os.stat(dest).st_uid, 0)

        def nobody(*cmd):
            return subprocess.run(["runuser", "-u", "nobody", "--"] + list(cmd),
                                  capture_output=True).returncode

        self.assertEqual(nobody("stat", self.tmp), 0)  # the parent is open to nobody
        self.assertNotEqual(nobody("test", "-r", os.path.join(rootfs, "bin", "rootsh")), 0)
        self.assertNotEqual(nobody("stat", rootfs), 0)
        self.assertNotEqual(nobody("stat", os.path.join(rootfs, "dev", "sda")), 0)
        # The runtime, as root, still runs the image as its User.
        name = "fpull-test-" + uuid.uuid4().hex[:12]
        cp = subprocess.run(["runc", "run", "--bundle", dest, name], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
        subprocess.run(["runc", "delete", "--force", name], capture_output=True)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stdout.splitlines()[0], "uid=1234 gid=2345 cwd=/work")

    def test_runtime_annotations_from_labels_are_dropped(self):
        # Issue 20: crun acts on run.oci.* annotations, runc on org.criu.config, CRI-O,
        # containerd and Kata on their own: an image's Labels must not choose how the
        # runtime runs it. Only org.opencontainers.image.* Labels become annotations.
        labels = {"site": "hpc", "org.opencontainers.image.title": "t",
                  "run.oci.handler": "krun", "run.oci.keep_original_groups": "1",
                  "io.kubernetes.cri-o.Devices": "/dev/sda", "io.containerd.x": "y",
                  "io.katacontainers.config.hypervisor.path": "/x", "org.criu.config": "/c",
                  "module.wasm.image/variant": "compat"}
        ref = self.push("app", "labels", Labels=labels)
        dest = os.path.join(self.tmp, "bundle")
        cp = fpull.run(["pull", "--format", "bundle", "--cache-dir", self.cache, ref, dest],
                       check=0)
        ann = self.read_config(dest)["annotations"]
        self.assertEqual(ann["org.opencontainers.image.title"], "t")
        self.assertEqual([k for k in ann if not k.startswith("org.opencontainers.image.")], [])
        self.assertIn("fpull: warning: 8 image label(s) not made annotations", cp.stderr)

    def test_env_entries_without_a_name_are_dropped(self):
        # Issue 20: "A" and "=x" are no environment variables; runtimes pass them on as is.
        ref = self.push("app", "env", Env=["A", "=x", "B=1", "", "PATH=/bin"])
        dest = os.path.join(self.tmp, "bundle")
        cp = fpull.run(["pull", "--format", "bundle", "--cache-dir", self.cache, ref, dest],
                       check=0)
        env = self.read_config(dest)["process"]["env"]
        self.assertEqual(env, ["PATH=/bin", "TERM=xterm", "B=1", "HOME=/home/app"])
        self.assertIn("fpull: warning: 3 Env entr", cp.stderr)


class BundleStaging(cases.RegistryCase):
    """Issue 20: the inner pull of a bundle works from the staging directory's descriptor,
    never from its path again after network time."""
    tmp_prefix = "fpull-bundle-staging-"

    @staticmethod
    def holds_open(pid, path):
        fds = "/proc/%d/fd" % pid
        try:
            return any(os.readlink(os.path.join(fds, n)) == path for n in os.listdir(fds))
        except OSError:
            return False

    def test_staging_replaced_during_the_pull_is_never_written_through(self):
        images.push_image(self.client, "hpc/run", "v1",
                          [[{"path": "etc/passwd", "type": "file", "data": PASSWD},
                            {"path": "hello", "type": "file", "data": "x", "mode": 0o755}]])
        proxy = faultproxy.FaultProxy(self.reg.url).start()
        self.addCleanup(proxy.stop)
        # The manifest and the blobs arrive slowly: time to swap the staging directory for a
        # symlink even on a loaded machine (the swap must happen before the rename into DEST).
        proxy.add(r"/manifests/", method="GET", trickle=(16, 0.1))
        proxy.add(r"/blobs/", method="GET", trickle=(64, 0.1))
        dest = os.path.join(self.tmp, "bundle")
        victim = os.path.join(self.tmp, "victim")
        os.mkdir(victim)
        p = subprocess.Popen([fpull.binary(), "pull", "-q", "--format", "bundle", "--cache-dir",
                              os.path.join(self.tmp, "cache"),
                              "127.0.0.1:%d/hpc/run:v1" % proxy.port, dest],
                             env=fpull.base_env({}), stderr=subprocess.PIPE, text=True)
        staging = None
        for _ in range(3000):
            names = [n for n in os.listdir(self.tmp) if n.startswith(".bundle.fpull-bundle-")]
            if names:
                staging = os.path.join(self.tmp, names[0])
                break
            if p.poll() is not None:
                break
            time.sleep(0.01)
        self.assertIsNotNone(staging, "no staging directory appeared")
        # Swap only once fpull holds the directory open, the case this test is about (a swap
        # before that is refused too, by open's O_NOFOLLOW).
        for _ in range(3000):
            if self.holds_open(p.pid, staging) or p.poll() is not None:
                break
            time.sleep(0.01)
        self.assertTrue(self.holds_open(p.pid, staging), "fpull never opened " + staging)
        os.rename(staging, os.path.join(self.tmp, "moved"))
        os.symlink(victim, staging)
        _, stderr = p.communicate(timeout=120)
        self.assertEqual(os.listdir(victim), [])  # nothing written through the symlink
        self.assertEqual(p.returncode, 1, stderr)
        self.assertIn("replaced while the bundle was built", fpull.error_line(stderr))
        self.assertFalse(os.path.lexists(dest))
        self.assertEqual(os.listdir(os.path.join(self.tmp, "moved")), [])
