#!/bin/bash
# Device command 75 — ran 2026-12-05 at 13:01 on nvidia-h100-x1 (the
# machine run 76 had warmed; three tries after run 74, at 09:17, 09:29 and
# 09:46, had found none), with run 76's `tinygpt` (a81f27d); output in
# run75/output.txt. Run 74 timed `tiled-2buf` faster
# than the engine's `tiled` in every tensor-core product row (2–10 %) but
# the nanoGPT step only once (25.67 against 25.76–25.83 ms). Here the
# step of `small` and `nanogpt` on both forms of the same build
# (`tinygpt` of a81f27d: 6726248's tensor-core products, the backward's reductions left to its end; `--coop-kernel`), alternating, up to three rounds (a time guard at 150 s), and
# each form's nanoGPT profile. Carry: .gl, .carry (bins.tar.xz: tinygpt).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r75; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
for round in 1 2 3; do
  for s in nanogpt small; do
    for k in tiled tiled-2buf; do
      [ $(( $(date +%s) - t0 )) -gt 150 ] && { echo "skipped $s $k $round (time)"; continue; }
      timeout 40 ./tinygpt bench --shape $s --coop-kernel $k > $R/shape-$s-$k-$round.json 2> $R/shape-$s-$k-$round.err; echo "$s $k $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done; save
done
for k in tiled tiled-2buf; do
  [ $(( $(date +%s) - t0 )) -gt 200 ] && { echo "skipped profile $k (time)"; continue; }
  timeout 30 ./tinygpt bench --profile --shape nanogpt --coop-kernel $k > $R/profile-nanogpt-$k.json 2> $R/profile-nanogpt-$k.err; echo "profile $k rc=$?"
done; save
python3 - <<'PY'
import json, glob
R = "/tmp/r75"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    s, rest = f.split("/")[-1][len("shape-"):-5].split("-", 1)
    k, rnd = rest.rsplit("-", 1)
    for t in d["train"]:
        if t["path"] == "coop-matrix": rows.setdefault((s, k), []).append(round(t["ms_per_step"], 3))
for k, v in sorted(rows.items()): print(*k, v)
for k in ("tiled", "tiled-2buf"):
    try:
        for r in json.load(open(f"{R}/profile-nanogpt-{k}.json"))["profile"]:
            if r["what"] == "train_step_coop": print(k, r["dispatches"], round(r["gpu_total_us"], 1), " ".join(f"{x['key']} {x['calls']}x{x['mean_us']:.1f}" for x in r["kernels"][:8]))
    except Exception as ex: print(k, ex)
PY
echo "all: $(( $(date +%s) - t0 ))s"
