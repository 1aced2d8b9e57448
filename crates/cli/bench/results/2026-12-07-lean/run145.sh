#!/bin/bash
# Device command 145 (2026-12-07; results in run145/). Builds: P0 from
# .carry/bins144.tar.xz (the submitted kernels, run 144's); N1 from
# .carry/bins145.tar.xz (P0 with the persistent tiled forms
# `tiled-ahead3-persist`, `tiled-tall-ahead2-persist`; the training
# forward's GELU epilogue writing the f16 copy alone; the tensor-core
# attention writing its outputs' f16 copies; the GELU backward's column
# form with the fc bias gradient's first stage). What matters first
# comes first (438 s of device time were left, starts included): the
# nanoGPT step on P0, N1 and N1's persistent forms; N1's profile (driver
# statistics); N1's training and matmul tests on the card; the matmul
# rows of N1 and P0; N1's attention tests on the card; PyTorch's nanoGPT
# training. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 144 145; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r145; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for b in P0 N1; do
  timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-1.json 2> $R/shape-nanogpt-$b-1.err; echo "nanogpt $b rc=$? $(( $(date +%s) - t0 ))s"
done
for k in tiled-ahead3-persist tiled-tall-ahead2-persist; do
  timeout 60 N1/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-N1$k-1.json 2> $R/shape-nanogpt-N1$k-1.err; echo "nanogpt N1 $k rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary121.py $R | grep "^train nanogpt" | grep -v "f16-\|f32" | cut -c1-120
timeout 100 N1/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-N1-engine.json 2> $R/profile-N1-engine.err; echo "profile N1 engine rc=$? $(( $(date +%s) - t0 ))s"; save
for t in coop_training matmul_coop; do
  timeout 150 N1/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-200 | sort | uniq -c; save
done
for b in N1 P0; do
  timeout 60 $b/tinygpt bench --shape matmuls > $R/matmuls-$b.json 2> $R/matmuls-$b.err; echo "matmuls $b rc=$? $(( $(date +%s) - t0 ))s"; save
done
timeout 60 N1/tests/attention_coop --test-threads 1 --nocapture > $R/test-attention_coop.txt 2>&1; echo "test attention_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "FAILED\|panicked\|test result" $R/test-attention_coop.txt | cut -c1-200 | sort | uniq -c; save
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
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
        if p["key"].startswith("matmul_coop_") and ("ahead" in p["key"] or "akm" in p["key"]):
            print("  regs", p["key"], int(p["executables"][0]["stats"]["Register Count"]))
PY
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|matmul .*4096\|pytorch" | grep -v "f16-\|f32 \|simt\|tiled-f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
