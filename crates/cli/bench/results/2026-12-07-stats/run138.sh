#!/bin/bash
# Device command 138 (2026-12-07; results in run138/). Run 137's one-pass
# forward failed its tests on the card (right on lavapipe; its rescaling
# under a branch on a workgroup flag). Builds from .carry/bins138.tar.xz,
# on `26ea57d`: A/ (the accumulators rescaled every block after the
# first, no flag or branch on it; with run134-coopfwd.patch:
# TINYGPT_COOP_FWD=1 binds the tensor-core forward in training), B/ (a
# diagnostic: never rescaled; carried, not run: the budget left one short
# command), fin/ (the code as submitted: A's forward; the three tensor-core
# attention kernels' blocks loaded straight into their tiles, none
# prefetched in registers; the training graph binding the tensor-core
# forward, the tensor-core gate's forward cases); cur/ from run 137's
# bins137 (`61f4c88`). The attention tests of A and fin and fin's
# training and reuse tests on the card (matmul_coop: unchanged since run
# 137); fin's profile with the driver's
# statistics; the attention rows of cur, A and fin, two rounds; PyTorch's
# nanoGPT training; the nanoGPT step of cur and fin, two rounds. Carry:
# .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 137 138; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r138; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for bt in fin/attention_coop A/attention_coop fin/coop_training fin/coop_reuse; do
  b=${bt%/*}; t=${bt#*/}
  timeout 100 .carry/$b/tests/$t --test-threads 1 --nocapture > $R/test-$t-$b.txt 2>&1; echo "test $bt rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t-$b.txt | cut -c1-160 | sort | uniq -c
done
save
cd .carry
for rnd in 1 2; do
  for b in cur A fin; do
    timeout 60 $b/tinygpt bench --attention-only --shape nanogpt > $R/att-$b-$rnd.json 2> $R/att-$b-$rnd.err; echo "att $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    try: rows = json.load(open(f))["attention"]
    except Exception as ex: print(f, ex); continue
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in cur fin; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 120 fin/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-fin.json 2> $R/profile-fin.err; echo "profile fin rc=$? $(( $(date +%s) - t0 ))s"; save
python3 - $R <<'PY'
import json, sys
try: d = json.load(open(f"{sys.argv[1]}/profile-fin.json"))
except Exception as ex: print(ex); sys.exit()
for r in d["pipeline_stats"].get("pipelines", []):
    if r["key"].startswith("attention") and r["profiled"]:
        e = r["executables"][0]["stats"]
        print("fin", r["key"], "registers", e.get("Register Count"), "shared", e.get("Shared Memory Size"))
for p in d["profile"]:
    if p.get("what") == "train_step_coop":
        print("fin coop step gpu", round(p["gpu_total_us"]), [(k["key"], round(k["mean_us"], 1)) for k in p["kernels"] if "attention" in k["key"]])
PY
grep -h "coop-matrix gate:" $R/shape-nanogpt-*-1.err | cut -c1-200
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|pytorch" | grep -v "f16-\|f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
