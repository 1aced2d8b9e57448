#!/bin/bash
# Device command 133 (2026-12-06; results in run133/). new/: the
# tensor-core attention kernels' loops over a subgroup's elements with
# constant trip counts (the subgroup width a pipeline constant, SW, where
# they stepped by the subgroup_size builtin), built with run 132's
# TINYGPT_ATT_ONLY switch; d0/: run 132's DIAG 0 build (`133c381`'s
# kernels). Carried in .carry/bins133.tar.xz. new's tensor-core attention
# tests on the card; the attention rows alone of each, alternating, three
# rounds; new's nanoGPT step. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins133.tar.xz -C .carry || exit 1
R=/tmp/r133; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 .carry/new/tests/attention_coop --test-threads 1 --nocapture > $R/test-attention_coop.txt 2>&1; echo "test attention_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head
save
cd .carry
for rnd in 1 2 3; do
  for b in d0 new; do
    TINYGPT_ATT_ONLY=1 timeout 60 $b/tinygpt bench --shape nanogpt > $R/att-$b-$rnd.json 2> $R/att-$b-$rnd.err; echo "att $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
timeout 60 new/tinygpt bench --shape nanogpt > $R/shape-nanogpt-new-1.json 2> $R/shape-nanogpt-new-1.err; echo "nanogpt new rc=$? $(( $(date +%s) - t0 ))s"; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    rows = json.load(open(f))["attention"]
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
