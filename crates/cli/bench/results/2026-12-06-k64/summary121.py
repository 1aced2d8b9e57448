"""Summarises a run folder of bench JSON (argument: the folder): the matmul
rows per build and round, the training steps (ms and final loss) and the
attention kernels' rows per build, PyTorch's training, the profiles."""
import glob, json, sys

R = sys.argv[1]
def load(f):
    try: return json.load(open(f))
    except Exception as ex: print(f, ex); return None
for f in sorted(glob.glob(f"{R}/matmuls-*.json")):
    d = load(f)
    if not d: continue
    c = f.split("/")[-1][len("matmuls-"):-5]
    for x in d["matmul"]:
        print("matmul", c, x["shape"][:24], x["path"], x.get("kernel", ""), round(x["tflops"], 1))
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = load(f)
    if not d: continue
    shape, rest = f.split("/")[-1][len("shape-"):-5].split("-", 1)
    c, rnd = rest.rsplit("-", 1)
    for x in d.get("train", []):
        rows.setdefault(("train", shape, c, x["path"]), []).append((round(x["ms_per_step"], 3), x["final_loss"]))
    for x in d.get("attention", []):
        rows.setdefault(("attention", shape, c, x["kernel"]), []).append(round(x["us"], 1))
for k in sorted(rows, key=str): print(*k, rows[k])
try:
    for l in open(f"{R}/pytorch_baseline.jsonl"):
        j = json.loads(l)
        print("pytorch_baseline", j.get("config"), j.get("mode"), j.get("ms_per_step", ""))
except Exception as ex: print("pytorch_baseline", ex)
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    d = load(f)
    if not d: continue
    for r in d["profile"]:
        if not r["what"].startswith("train"): continue
        print(f.split("/")[-1], r["what"], r.get("config"), r.get("dispatches"), round(r.get("gpu_total_us", 0), 1))
        for k in sorted(r["kernels"], key=lambda k: -k["total_us"])[:20]:
            print("    ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"], 1))
