#!/bin/bash
# Device command 130 (2026-12-06; results in run130/). The submitted build
# (final/: run 129's dx with DIRECT a bool and the unused unbiased-only
# mode removed) against `114f5cf` (prev/), carried in
# .carry/bins130.tar.xz; one command: final's tensor-core tests on the
# card; the matmul rows of each, two rounds; the nanoGPT step of each on
# the engine's form and of final on tiled-tall-ahead2. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins130.tar.xz -C .carry || exit 1
R=/tmp/r130; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/final/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for rnd in 1 2; do
  for b in prev final; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for b in "prev tiled-ahead3" "final tiled-ahead3" "final tiled-tall-ahead2"; do
  set -- $b
  timeout 60 $1/tinygpt bench --shape nanogpt --coop-kernel $2 > $R/shape-nanogpt-$1-$2-1.json 2> $R/shape-nanogpt-$1-$2-1.err; echo "nanogpt $1 $2 rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary121.py $R | grep -v "^    " | grep "square\|train nanogpt" | grep "coop" | grep "tiled-ahead3\|tiled-tall-ahead2\|tiled-2buf \|train" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
