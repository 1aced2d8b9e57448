#!/bin/bash
# Device command 134 (2026-12-07; results in run134/). Builds, each with
# run 132's TINYGPT_ATT_ONLY switch: d0/ (run 132's DIAG 0 build,
# `133c381`'s kernels) and new/ (run 133's: `7652ad9`'s, the tensor-core
# attention's loops at constant trip counts), from .carry/bins133.tar.xz;
# n134/ (`f087f8c`: the forward's scores spilled column by column, dK/dV's
# weights and dS in one loop with a fourth tile, the matmul's bias tile
# loaded once a column), from bins134.tar.xz; n135/ (the kernels as
# submitted, `e6cd8c0`: the spills and the matmul's scratch at strides whose
# cooperative stores fall on different banks, the forward's query rows
# over its key tiles, the backward's row terms in the spills' padding,
# dK/dV's dS kept in registers — 32 KiB at most; its tinygpt also with
# run134-coopfwd.patch: TINYGPT_COOP_FWD=1 binds the tensor-core forward
# in the training graph), from bins135.tar.xz.
# n135's tensor-core tests on the card; the attention rows of each build,
# alternating, two rounds; then twice the nanoGPT step of new and n135 on
# `tiled-ahead3` (the engine's form), n135's on `tiled-tall-ahead2` and
# with the tensor-core forward, and the matmul rows of new and n135;
# PyTorch's nanoGPT training. Carry:
# .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 133 134 135; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r134; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/n135/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for rnd in 1 2; do
  for b in d0 new n134 n135; do
    TINYGPT_ATT_ONLY=1 timeout 60 $b/tinygpt bench --shape nanogpt > $R/att-$b-$rnd.json 2> $R/att-$b-$rnd.err; echo "att $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    try: rows = json.load(open(f))["attention"]
    except Exception as ex: print(f, ex); continue
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
step() { # build, form, round, [env]
  env $4 timeout 60 $1/tinygpt bench --shape nanogpt --coop-kernel $2 > $R/shape-nanogpt-$1$5-$2-$3.json 2> $R/shape-nanogpt-$1$5-$2-$3.err; echo "nanogpt $1$5 $2 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
for rnd in 1 2; do
  step new tiled-ahead3 $rnd; step n135 tiled-ahead3 $rnd; step n135 tiled-tall-ahead2 $rnd
  step n135 tiled-ahead3 $rnd TINYGPT_COOP_FWD=1 fwd; save
  for b in new n135; do
    timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep -v "^    " | grep "4096\|train nanogpt\|pytorch\|fc\|qkv\|proj" | grep "tiled-ahead3\|tiled-tall-ahead2\|train\|pytorch" | grep -v "f32\|f16-" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
