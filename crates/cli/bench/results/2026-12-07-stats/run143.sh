#!/bin/bash
# Device command 143 (2026-12-07; results in run143/). Builds: F/ from
# .carry/bins139.tar.xz (`e7361a7`); F4/ from .carry/bins143.tar.xz (F
# with the forward's tiles four halves an element: each block's copy
# and each four weights stored at once, as the matmul's tiles are). F4's
# attention and
# training tests on the card; the attention rows of F and F4, two rounds;
# the nanoGPT step of F and F4, two rounds. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 139 143; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r143; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop coop_training; do
  timeout 100 .carry/F4/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-160 | sort | uniq -c
done
save
cd .carry
for rnd in 1 2; do
  for b in F F4; do
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
for rnd in 1 2; do
  for b in F F4; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
grep -h "coop-matrix gate:\|attention forward out" $R/shape-nanogpt-*-1.err | cut -c1-200
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt" | grep -v "f16-\|f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
