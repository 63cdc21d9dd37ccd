#!/usr/bin/env python3
"""Runs fpull's CPU detection under one qemu-user x86-64 CPU model and checks every amd64 tag
it reports by execution: code built with `gcc -O3 -march=TAG` runs on that model (a tag is
reported only when code built for it runs: issue 33). The model's expected tags must be
there, the absent ones must not. qemu's TCG emulates no MONITORX/MWAITX at all, so every
model here is also a CPU whose MWAITX is hidden.

Usage: x86_exec.py --qemu QEMU --model MODEL   (env: FPULL_BIN, FPULL_DATA_DIR)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# model: (tags that must be present, tags that must be absent). qemu 7.2's TCG has no
# AVX-512, SHA, PREFETCHW or ADX, so nothing above haswell can be reported.
EXPECT = {
    "Nehalem": (["nehalem", "x86-64-v2"], ["westmere", "sandybridge", "x86-64-v3"]),
    "Haswell-noTSX": (["haswell", "x86-64-v3"], ["broadwell", "x86-64-v4"]),
    "EPYC-Milan": (["haswell", "x86-64-v3"], ["znver1", "x86-64-v4"]),
    "max": (["haswell", "x86-64-v3"], ["x86-64-v4", "skylake-avx512"]),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qemu", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    present, absent = EXPECT[a.model]
    env = dict(os.environ, FPULL_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
               FPULL_NVIDIA_PROC_VERSION="/nonexistent/version")
    env.pop("FPULL_CPUID_FILE", None)
    r = subprocess.run([a.qemu, "-cpu", a.model, os.environ["FPULL_BIN"], "features", "--json"],
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        sys.exit("fpull features under %s -cpu %s: exit %d: %s"
                 % (a.qemu, a.model, r.returncode, r.stderr.strip()[-500:]))
    got = set(json.loads(r.stdout)["features"])
    bad = ["missing %s" % t for t in present if t not in got]
    bad += ["unexpected %s" % t for t in absent if t in got]
    with tempfile.TemporaryDirectory() as tmp:
        ran = []
        for tag in sorted(got):
            # Only what GCC takes as -march (tags and levels; raw flags are not).
            exe = os.path.join(tmp, tag)
            c = subprocess.run(["gcc", "-O3", "-march=" + tag, os.path.join(HERE, "march_loop.c"),
                                "-o", exe], capture_output=True, text=True)
            if c.returncode != 0:
                continue
            x = subprocess.run([a.qemu, "-cpu", a.model, exe], capture_output=True, text=True,
                               timeout=60)
            if x.returncode != 0:
                bad.append("wrong %s: code built with -march=%s exits %d under -cpu %s"
                           % (tag, tag, x.returncode, a.model))
                continue
            ran.append(tag)
    print("qemu -cpu %s: tags %s" % (a.model, " ".join(ran)))
    if not ran:
        bad.append("no tag was checked by execution")
    if bad:
        sys.exit("qemu -cpu %s: %s" % (a.model, "; ".join(bad)))
    print("ok: %s, %d tags run" % (a.model, len(ran)))


if __name__ == "__main__":
    main()
