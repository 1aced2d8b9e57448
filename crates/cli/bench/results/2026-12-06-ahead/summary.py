"""Summarises run 102's folder of bench JSON (argument: the folder):
training steps and greedy/top-k tokens/s per build (`carry` new, `old`
run 101's), PyTorch's decoders, the decode profiles."""
import glob, json, sys

R = sys.argv[1]
for f in sorted(glob.glob(f"{R}/matmuls-*.json")):
    c = f.split("/")[-1][len("matmuls-"):-5]
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    for x in d["matmul"]:
        print("matmul", c, x["shape"][:24], x["path"], x.get("kernel", ""), round(x["tflops"], 1))
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    shape, rest = f.split("/")[-1][len("shape-"):-5].split("-", 1)
    c, rnd = rest.rsplit("-", 1)
    for x in d.get("train", []):
        rows.setdefault(("train", shape, c, x["path"]), []).append(round(x["ms_per_step"], 3))
    for x in d["sample"]:
        n = 8 if x["sample_tokens_per_s"] > 30000 else 1
        rows.setdefault(("sample", shape, c, x["decoder"], x.get("dispatches_per_token"), x["path"], x["mode"][:12], x.get("samples", n)), []).append(round(x["sample_tokens_per_s"]))
for k in sorted(rows, key=str): print(*k, rows[k])
for name in ["pytorch_decode", "pytorch_baseline"]:
    try:
        for l in open(f"{R}/{name}.jsonl"):
            j = json.loads(l)
            print(name, j.get("config"), j.get("mode"), j.get("tokens_per_s"), j.get("ms_per_step", ""))
    except Exception as ex: print(name, ex)
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    for r in d["profile"]:
        print(f.split("/")[-1], r["what"], r.get("config"), r.get("dispatches", r.get("dispatches_per_token")),
              round(r.get("gpu_total_us", r.get("gpu_us_per_token", 0)), 1))
        if r["what"].startswith("train") or r["what"].startswith("decode_token"):
            for k in sorted(r["kernels"], key=lambda k: -k["total_us"])[:14]:
                print("    ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"], 1))
