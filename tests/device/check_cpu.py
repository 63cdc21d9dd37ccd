#!/usr/bin/env python3
"""The CPU tags fpull reports on this machine, checked against the machine itself (issue
33): every amd64 tag fpull reports runs code built with `gcc -O3 -march=TAG` here (no wrong
tag), and the tag this machine's own GCC picks for -march=native is among them (no missed
tag). Code is built here, or taken prebuilt from a directory (scripts/device-check pack,
for a machine without a compiler).

Usage: check_cpu.py FPULL DATA_DIR [PREBUILT_DIR]
Exit 0 when both hold, 1 otherwise, 77 on a machine that is not x86-64.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = os.path.join(HERE, "..", "qemu", "march_loop.c")


def fpull_tags(fpull, data_dir):
    env = dict(os.environ, FPULL_DATA_DIR=data_dir)
    r = subprocess.run([fpull, "features", "--json"], capture_output=True, text=True, env=env,
                       check=True)
    return set(json.loads(r.stdout)["features"])


def known_tags(fpull, data_dir):
    env = dict(os.environ, FPULL_DATA_DIR=data_dir)
    r = subprocess.run([fpull, "features", "--list-known"], capture_output=True, text=True,
                       env=env, check=True)
    return {ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()}


def best_tag(fpull, data_dir):
    """The best CPU tag of fpull's summary line (the CPU's own generation where it runs)."""
    env = dict(os.environ, FPULL_DATA_DIR=data_dir)
    r = subprocess.run([fpull, "features"], capture_output=True, text=True, env=env, check=True)
    for ln in r.stdout.splitlines():
        if ln.startswith("summary:") and "best CPU tag " in ln:
            return ln.split("best CPU tag ")[1].split()[0].rstrip(",")
    return None


def native_tag():
    """What this machine's GCC takes -march=native for, or None without GCC."""
    if not shutil.which("gcc"):
        return None
    r = subprocess.run(["gcc", "-march=native", "-Q", "--help=target"], capture_output=True,
                       text=True)
    for ln in r.stdout.splitlines():
        f = ln.split()
        if len(f) == 2 and f[0] == "-march=":
            return f[1]
    return None


def build(tag, out_dir):
    """march_loop.c built for TAG into out_dir, or None where GCC has no such -march."""
    exe = os.path.join(out_dir, tag)
    c = subprocess.run(["gcc", "-O3", "-march=" + tag, LOOP, "-o", exe], capture_output=True)
    return exe if c.returncode == 0 else None


def main():
    if platform.machine() not in ("x86_64", "AMD64"):
        print("not an x86-64 machine: nothing to check")
        return 77
    fpull, data_dir = sys.argv[1], sys.argv[2]
    prebuilt = sys.argv[3] if len(sys.argv) > 3 else None
    got = fpull_tags(fpull, data_dir)
    bad = []
    native = native_tag()
    if native and native in known_tags(fpull, data_dir) and native not in got:
        bad.append("missed %s: this machine's GCC builds -march=native for it" % native)
    # The best tag is GCC's -march=native or a newer name for this CPU (a table name this GCC
    # predates, znver4 where GCC 12 says znver3), and is itself among the tags reported, whose
    # code is run below.
    best = best_tag(fpull, data_dir)
    if native and best != native and (best not in got or native not in got):
        bad.append("best tag %s: neither GCC's -march=native (%s) nor a tag reported" %
                   (best, native))
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(prebuilt, "x86-64") if prebuilt else build("x86-64", tmp)
        want = subprocess.run([base], capture_output=True, text=True, check=True).stdout
        ran = []
        for tag in sorted(got):
            exe = os.path.join(prebuilt, tag) if prebuilt else build(tag, tmp)
            if not exe or not os.path.exists(exe):
                continue  # a raw extension name, not a -march value
            x = subprocess.run([exe], capture_output=True, text=True, timeout=60)
            if x.returncode != 0 or x.stdout != want:
                bad.append("wrong %s: code built with -march=%s exits %d here"
                           % (tag, tag, x.returncode))
            else:
                ran.append(tag)
    print("fpull reports %d tags, best %s; GCC's -march=native: %s; ran here: %s"
          % (len(got), best, native or "(no GCC)", " ".join(ran)))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
