#!/usr/bin/env python3
"""NVIDIA detection and choice on a real driver, for a machine with an NVIDIA GPU.

The suite tests NVML through a stand-in libnvidia-ml.so.1 (tests/unit/test_nvml.c); this
checks the same code against the real driver: what `fpull features` reports must be what
nvidia-smi reports (driver version, compute capability, CUDA version), and a pull from a
local docker-registry of an index with entries for this GPU, for another driver and for
CUDA requirements this driver does or does not meet must choose the one built for this
node. It exits 1 on the first mismatch, 77 where the machine has no NVIDIA GPU.

Run by scripts/device-check (which carries fpull, its libraries and docker-registry to
the GPU machine); usage: check_nvidia.py FPULL DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import images  # noqa: E402
import registry  # noqa: E402

failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def smi():
    """nvidia-smi's view of the GPUs: [{name, compute_cap, driver_version}]."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True, check=True)
    gpus = []
    for line in out.stdout.strip().splitlines():
        name, cc, drv = [x.strip() for x in line.split(",")]
        gpus.append({"name": name, "cc": cc, "driver": drv})
    head = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    cuda = None
    for word in head.split("CUDA Version:")[1:2]:
        cuda = word.split()[0]
    return gpus, cuda


def main():
    fpull, data = sys.argv[1], sys.argv[2]
    try:
        gpus, cuda = smi()
    except (OSError, subprocess.CalledProcessError) as e:
        print("no NVIDIA GPU here (%s)" % e)
        return 77
    print("nvidia-smi: %s; CUDA %s" % (gpus, cuda))
    env = dict(os.environ, FPULL_DATA_DIR=data, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="fpull-device-") as tmp:
        env.update(HOME=tmp, FPULL_CACHE=os.path.join(tmp, "cache"),
                   FPULL_CONFIG=os.path.join(tmp, "none.yaml"))
        print(subprocess.run([fpull, "version"], env=env, capture_output=True,
                             text=True).stdout.strip())
        text = subprocess.run([fpull, "features"], env=env, capture_output=True, text=True)
        print(text.stdout.splitlines()[0] if text.stdout else text.stderr)
        print(text.stderr.strip())
        cp = subprocess.run([fpull, "features", "--json"], env=env, capture_output=True,
                            text=True, check=True)
        src = json.loads(cp.stdout)["sources"]
        nv = sorted(f for f, s in src.items() if s == "nvidia")
        print("fpull's nvidia features: %s" % nv)

        drv = gpus[0]["driver"].split(".")
        full = "nvidia-" + "-".join(drv)
        for i in range(1, len(drv) + 1):
            name = "nvidia-" + "-".join(drv[:i])
            check(src.get(name) == "nvidia", "%s detected (driver %s)" % (name, gpus[0]["driver"]))
        ccs = {g["cc"] for g in gpus}
        low = min(ccs, key=lambda c: tuple(int(x) for x in c.split(".")))
        major, minor = low.split(".")
        cc_feature = "nv-compute-%s-%s" % (major, minor)
        check(src.get(cc_feature) == "nvidia", "%s detected (nvidia-smi: %s)" % (cc_feature, low))
        check(not any(f.startswith("nv-compute-%s-" % major) and int(f.rsplit("-", 1)[1]) >
                      int(minor) for f in nv), "no compute capability above %s claimed" % low)
        if cuda:
            cuda_feature = "cuda-" + cuda.replace(".", "-")
            check(src.get(cuda_feature) == "nvidia", "%s detected (nvidia-smi: CUDA %s)" %
                  (cuda_feature, cuda))
        check(not any(f.startswith("nvidia-396") for f in nv), "no foreign driver claimed")

        with registry.Registry() as reg:
            client = images.Client(reg.url)
            # (entry, features, NVIDIA_REQUIRE_CUDA or None); the right one for this node is
            # "this-gpu": the others need another driver, a CUDA this driver lacks, or fit
            # less well (no compute capability named).
            rows = [("generic", [], None),
                    ("other-driver", ["nvidia-396-44", cc_feature], None),
                    ("needs-cuda-99", ["nvidia-" + drv[0], cc_feature], "cuda>=99.0"),
                    ("this-gpu", ["nvidia-" + drv[0], cc_feature],
                     "cuda>=%s" % (cuda or "11.0")),
                    ("driver-only", ["nvidia-" + drv[0]], None),
                    ("cc-too-new", ["nv-compute-%d-0" % (int(major) + 1)], None)]
            entries = []
            for name, feats, require in rows:
                cfg = {"Labels": {"entry": name}}
                if require:
                    cfg["Env"] = ["NVIDIA_REQUIRE_CUDA=" + require]
                img = images.push_image(client, "gpu/app", name,
                                        [[{"path": "entry", "data": name + "\n"}]],
                                        config_extra={"config": cfg})
                plat = {"os": "linux", "architecture": "amd64"}
                if feats:
                    plat["features"] = feats
                entries.append((img, plat))
            images.push_index(client, "gpu/app", "v1", entries)
            ref = "%s/gpu/app:v1" % reg.hostport
            ins = subprocess.run([fpull, "inspect", ref], env=env, capture_output=True,
                                 text=True)
            print(ins.stdout + ins.stderr)
            dest = os.path.join(tmp, "rootfs")
            cp = subprocess.run([fpull, "pull", "--json", ref, dest], env=env,
                                capture_output=True, text=True)
            print(cp.stderr.strip())
            check(cp.returncode == 0, "pull exits 0 (%d)" % cp.returncode)
            got = open(os.path.join(dest, "entry")).read().strip() if cp.returncode == 0 else None
            check(got == "this-gpu", "the entry built for this GPU and driver is chosen (%s)" % got)
            # The same index for a login node without GPUs (--features replaces what was
            # detected): the generic entry.
            def pull_entry(name, *opts):
                d = os.path.join(tmp, name)
                cp = subprocess.run([fpull, "pull", "-q"] + list(opts) + [ref, d], env=env,
                                    capture_output=True, text=True)
                return open(os.path.join(d, "entry")).read().strip() if cp.returncode == 0 \
                    else cp.stderr.strip()
            got = pull_entry("rootfs-cpu", "--features", "x86-64-v2")
            check(got == "generic", "--features x86-64-v2 (a node without GPUs) gets the "
                  "generic entry (%s)" % got)
            # Contract v5: --platform with no features on the host's own os/architecture
            # constrains, it does not erase: the GPU is still this node's.
            got = pull_entry("rootfs-platform", "--platform", "linux/amd64")
            check(got == "this-gpu", "--platform linux/amd64 keeps the detected GPU (%s)" % got)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
