#!/usr/bin/env python3
"""Runs the cross-built hwcap probe under one qemu-user CPU model and checks the tags fpull
derives from what it reports (the shipped data/cputags.yaml, through `fpull features
--platform`), against what GCC's tables say that CPU is: the model's own GCC -mcpu tag must
be there, the tags of richer CPUs must not.

Usage: run.py --qemu QEMU --probe PROBE --model MODEL   (env: FPULL_BIN, FPULL_DATA_DIR)
"""
import argparse
import json
import os
import subprocess
import sys

# model: (OCI architecture, tags that must be present, tags that must be absent). The
# present ones are the GCC -mcpu (or -march level) names whose macro set the model's
# registers cover; the absent ones need an extension that model lacks (named in the comment).
EXPECT = {
    # Armv8.2-A with SVE; no dot product (neoverse-n1), no JSCVT (armv8.3-a), no SVE2.
    "a64fx": ("arm64", ["a64fx", "armv8.2-a", "armv8-a"],
              ["armv8.3-a", "neoverse-n1", "neoverse-v1", "neoverse-v2", "cortex-a510"]),
    # Armv8.2-A with dot product, FP16 and RCpc; no SVE (a64fx, neoverse-v1), no JSCVT/FCMA,
    # no pointer authentication (cortex-a78c and cortex-x1c, whose GCC definitions have it
    # without a macro: issue 23).
    "neoverse-n1": ("arm64", ["neoverse-n1", "cortex-a76", "cortex-a55", "armv8.2-a"],
                    ["neoverse-v1", "a64fx", "armv8.3-a", "neoverse-n2", "cortex-a78c",
                     "cortex-x1c", "pauth"]),
    # The same registers as qemu's neoverse-n1: a Cortex-A76 is an N1 to GCC, and not a
    # Cortex-A78C or X1C (no PAuth, no FlagM).
    "cortex-a76": ("arm64", ["cortex-a76", "neoverse-n1", "cortex-a55", "armv8.2-a"],
                   ["cortex-a78c", "cortex-x1c", "pauth", "flagm", "armv8.3-a", "neoverse-v1",
                    "a64fx"]),
    # Armv8.0-A with CRC32 (and crypto); no LSE atomics (armv8.1-a, cortex-a55).
    "cortex-a72": ("arm64", ["cortex-a72", "cortex-a53", "armv8-a"],
                   ["armv8.1-a", "cortex-a55", "neoverse-n1", "thunderx2t99"]),
    # qemu's everything model: SVE2 with I8MM and BF16, PAuth, FlagM, SB and RCpc, so the
    # newest GCC tags too. (qemu 7.2 has no MOPS, which armv8.8-a has in GCC without a
    # macro; a later qemu's max may.)
    "max": ("arm64", ["neoverse-v2", "grace", "neoverse-v1", "neoverse-n2", "a64fx", "armv9-a",
                      "armv8.7-a", "thunderx3t110", "cortex-a78c", "apple-m2", "pauth"], []),
    # ISA 2.07; no ISA 3.00.
    "power8": ("ppc64le", ["power8"], ["power9", "power10"]),
    # ISA 3.00 with IEEE128; no ISA 3.1 or MMA.
    "power9": ("ppc64le", ["power9", "power8"], ["power10"]),
    "power10": ("ppc64le", ["power10", "power9", "power8"], []),
}


def tag_architectures(path):
    """name -> architecture of every tag in the shipped table (its generated layout)."""
    out, name = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("- name: "):
                name = line[len("- name: "):]
            elif line.startswith("architecture: ") and name:
                out[name] = line[len("architecture: "):]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qemu", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    arch, present, absent = EXPECT[a.model]

    if not os.access(a.probe, os.X_OK):
        sys.exit("%s not built (cmake target hwcap-probe-*)" % a.probe)
    r = subprocess.run([a.qemu, "-cpu", a.model, a.probe], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        sys.exit("probe under %s -cpu %s: exit %d: %s" % (a.qemu, a.model, r.returncode,
                                                          r.stderr.strip()))
    print(r.stdout, end="")
    report = {}
    isa = []
    for line in r.stdout.splitlines():
        key, _, val = line.partition(" ")
        if key == "isa":
            isa.append(val)
        else:
            report[key] = val
    if not isa:
        sys.exit("the probe reported no extensions")
    if arch == "ppc64le" and report.get("level") != a.model:
        sys.exit("POWER level %r, want %r" % (report.get("level"), a.model))

    table = tag_architectures(os.path.join(os.environ["FPULL_DATA_DIR"], "cputags.yaml"))
    spec = "linux/%s:%s" % (arch, ":".join(isa))
    f = subprocess.run([os.environ["FPULL_BIN"], "features", "--json", "--platform", spec],
                       capture_output=True, text=True, timeout=60)
    if f.returncode != 0:
        sys.exit("fpull features: exit %d: %s" % (f.returncode, f.stderr.strip()))
    got = set(json.loads(f.stdout)["features"])
    tags = sorted(t for t in got if t not in isa)
    print("tags:", " ".join(tags))
    bad = ["missing %s" % t for t in present if t not in got]
    bad += ["unexpected %s" % t for t in absent if t in got]
    # Nothing of another architecture's table may leak in (x86 also has crc32, fma, aes).
    bad += ["%s tag %s" % (table[t], t) for t in got if table.get(t, arch) != arch]
    if bad:
        sys.exit("qemu -cpu %s: %s" % (a.model, ", ".join(bad)))
    print("ok: %s" % a.model)


if __name__ == "__main__":
    main()
