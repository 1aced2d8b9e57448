#!/bin/bash
# Device command 139 (2026-12-07; results in run139/). Builds: fin/ from
# .carry/bins138.tar.xz (`65d1ec8`: the one-pass tensor-core forward
# bound in training); from .carry/bins139.tar.xz, F/ (fin with the
# tensor-core attention kernels compiled per head size — `HS`, a pipeline
# constant — and the forward's barrier after its softmax a subgroup's)
# and Dg/ (F with run139-diag.patch: TINYGPT_ATT_DIAG=n takes one part of
# the forward out — 1 the rescaling, 2 the softmax, 3 the blocks' distinct
# rows, 4 the PV products; timing only, wrong outputs). F's attention and
# training tests on the card; the attention rows of fin, F and Dg 0–4, two
# rounds; the nanoGPT step of fin and F, two rounds; PyTorch's nanoGPT
# training; F's profile with the driver's statistics. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 138 139; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r139; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop coop_training; do
  timeout 100 .carry/F/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-160 | sort | uniq -c
done
save
cd .carry
for rnd in 1 2; do
  for b in fin F Dg0 Dg1 Dg2 Dg3 Dg4; do
    d=${b#Dg}; [ "$d" = "$b" ] && d="" || b=Dg
    TINYGPT_ATT_DIAG=$d timeout 60 $b/tinygpt bench --attention-only --shape nanogpt > $R/att-$b$d-$rnd.json 2> $R/att-$b$d-$rnd.err; echo "att $b$d $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    try: rows = json.load(open(f))["attention"]
    except Exception as ex: print(f, ex); continue
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
for rnd in 1 2; do
  for b in fin F; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 100 F/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-F.json 2> $R/profile-F.err; echo "profile F rc=$? $(( $(date +%s) - t0 ))s"; save
grep -h "coop-matrix gate:" $R/shape-nanogpt-*-1.err | cut -c1-200
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|pytorch" | grep -v "f16-\|f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
