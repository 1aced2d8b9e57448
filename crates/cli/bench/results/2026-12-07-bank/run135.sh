#!/bin/bash
# Device command 135 (2026-12-07; results in run135/). n136/ (the kernels
# as submitted: run 134's n135 with dK/dV's dS tile back as pipelines of
# their own, `DS_TILE`, bound where the device offers their 37,888 bytes —
# n134's one loop — and the 32 KiB two-loop kernel elsewhere) against new/
# (run 133's build, `7652ad9`'s kernels), each with run 132's
# TINYGPT_ATT_ONLY switch; from .carry/bins133.tar.xz and bins136.tar.xz.
# n136's tensor-core attention tests on the card (both dK/dV kernels); the
# attention rows of each, two rounds; the nanoGPT step of each on the
# engine's form, two rounds. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 133 136; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r135; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 .carry/n136/tests/attention_coop --test-threads 1 --nocapture > $R/test-attention_coop.txt 2>&1; echo "test attention_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head
save
cd .carry
for rnd in 1 2; do
  for b in new n136; do
    TINYGPT_ATT_ONLY=1 timeout 30 $b/tinygpt bench --shape nanogpt > $R/att-$b-$rnd.json 2> $R/att-$b-$rnd.err; echo "att $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
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
  for b in new n136; do
    timeout 40 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary121.py $R | grep "train nanogpt" | grep coop
echo "all: $(( $(date +%s) - t0 ))s"
