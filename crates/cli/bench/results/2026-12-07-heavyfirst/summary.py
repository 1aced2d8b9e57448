#!/usr/bin/env python3
"""Summarises a device run's folder: training rows, coop matmul rows,
profiles (coop step kernels, matmul registers), PyTorch rows."""
import glob, gzip, json, os, sys

def load(f):
    op = gzip.open if f.endswith(".gz") else open
    try:
        with op(f, "rt") as h:
            return json.load(h)
    except Exception as ex:
        print(f"# {os.path.basename(f)}: {ex}")
        return None

root = sys.argv[1]
for f in sorted(g for g in glob.glob(root + "/*.json*") if ".jsonl" not in g):
    name = os.path.basename(f).split(".json")[0]
    d = load(f)
    if not d:
        continue
    for r in d.get("train", []):
        print(f"train {name:42s} {r['path']:12s} {r['ms_per_step']:8.3f} ms loss {r['final_loss']!r}")
    for r in d.get("matmul", []):
        if r.get("path") == "coop-matrix":
            print(f"matmul {name:20s} {r['shape'][:22]:22s} {r['kernel']:24s} {r['tflops']:6.1f}")
    for r in d.get("profile", []):
        if r.get("what") == "train_step_coop":
            ks = sorted(r["kernels"], key=lambda k: -k["total_us"])
            print(f"profile {name} step {r['gpu_total_us']:.0f} us")
            for k in ks[:14]:
                print(f"    {k['key'][:48]:48s} {k['calls']:4d} x {k['mean_us']:8.1f} = {k['total_us']:8.0f}")
    for p in d.get("pipeline_stats", {}).get("pipelines", []):
        if p["key"].startswith("matmul_coop_"):
            st = p["executables"][0]["stats"]
            print(f"    regs {p['key']:44s} {int(st['Register Count'])} shared {st.get('Shared Memory Size')}")
for f in sorted(glob.glob(root + "/pytorch*.jsonl*")):
    op = gzip.open if f.endswith(".gz") else open
    for line in op(f, "rt"):
        try:
            r = json.loads(line)
        except Exception:
            continue
        if "ms_per_step" in r:
            print(f"pytorch {r['config']} {r['mode']:8s} {r['ms_per_step']:8.3f} ms")
