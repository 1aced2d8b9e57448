"""Prints run 97's figures from its results folder (argument)."""
import glob
import gzip
import json
import sys


def load(path):
    """A JSON file, or its .gz."""
    if path.endswith(".gz"):
        return json.load(gzip.open(path))
    return json.load(open(path))


R = sys.argv[1]
for f in sorted(glob.glob(f"{R}/shape-*.json*")):
    try:
        d = load(f)
    except (OSError, ValueError):
        print(f, "unreadable")
        continue
    name = f.split("/")[-1].split(".json")[0]
    for t in d.get("train", []):
        print(name, "train", t["path"], round(t["ms_per_step"], 3), t["final_loss"])
    for a in d.get("attention", []):
        print(name, "attention", a["shape"], a["kernel"], round(a["us"], 1))
for l in open(f"{R}/pytorch_baseline.jsonl"):
    j = json.loads(l)
    print("pytorch", j["config"], j["mode"], j.get("ms_per_step"))
try:
    prof = glob.glob(f"{R}/profile-nanogpt-on.json*")[0]
    for r in load(prof)["profile"]:
        if r["what"] == "train_step_coop":
            top = " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:14])
            print("profile", r["dispatches"], round(r["gpu_total_us"]), top)
except (OSError, ValueError, KeyError, IndexError) as e:
    print("profile unreadable", e)
