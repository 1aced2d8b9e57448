#!/bin/bash
# Device command 144 (2026-12-07; results in run144/). Builds from
# .carry/bins144.tar.xz: P0 (HEAD: the profile lists every training
# dispatch with its grid) and P1 (P0 with run144-lean.patch: the `tiled`
# and `tiled-2buf` forms load each step's op(B) fragments one at a time,
# scratch epilogue — do fewer registers let two workgroups share an
# SM?). P1's matmul_coop test on the card; P0's profile of the nanoGPT
# step on the engine's kernel (driver statistics) and on three others;
# P1's on `tiled` and `tiled-2buf` (statistics); matmul rows of P0 and P1;
# the nanoGPT step on P0. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins144.tar.xz -C .carry || exit 1
R=/tmp/r144; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
timeout 120 P1/tests/matmul_coop --test-threads 1 --nocapture > $R/test-matmul_coop.txt 2>&1; echo "test matmul_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "FAILED\|panicked\|test result" $R/test-matmul_coop.txt | cut -c1-160 | sort | uniq -c
save
timeout 100 P0/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-P0-engine.json 2> $R/profile-P0-engine.err; echo "profile P0 engine rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 100 P1/tinygpt bench --profile --shape nanogpt --pipeline-stats --coop-kernel tiled > $R/profile-P1-tiled.json 2> $R/profile-P1-tiled.err; echo "profile P1 tiled rc=$? $(( $(date +%s) - t0 ))s"; save
for k in tiled-tall-ahead2 tiled-2buf tiled; do
  timeout 100 P0/tinygpt bench --profile --shape nanogpt --coop-kernel $k > $R/profile-P0-$k.json 2> $R/profile-P0-$k.err; echo "profile P0 $k rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 100 P1/tinygpt bench --profile --shape nanogpt --coop-kernel tiled-2buf > $R/profile-P1-tiled-2buf.json 2> $R/profile-P1-tiled-2buf.err; echo "profile P1 tiled-2buf rc=$? $(( $(date +%s) - t0 ))s"; save
for b in P0 P1; do
  timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$b.json 2> $R/matmuls-$b.err; echo "matmuls $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 60 P0/tinygpt bench --shape nanogpt > $R/shape-nanogpt-P0.json 2> $R/shape-nanogpt-P0.err; echo "nanogpt P0 rc=$? $(( $(date +%s) - t0 ))s"; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/profile-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    for r in d["profile"]:
        if r.get("what") == "train_step_coop":
            ks = [k for k in r["kernels"] if "matmul" in k["key"]]
            print(os.path.basename(f), round(r["gpu_total_us"]), " ".join(f"{k['key'][11:]}:{k['calls']}x{k['mean_us']:.0f}" for k in ks))
    for p in d.get("pipeline_stats", {}).get("pipelines", []):
        if p["key"].startswith("matmul_coop_128x128_k32") and "akm" not in p["key"] and "bnk" not in p["key"]:
            print("  regs", p["key"], int(p["executables"][0]["stats"]["Register Count"]))
PY
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|matmul .*4096" | grep -v "f16-\|f32 \|simt\|tiled-f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
