#!/bin/bash
# Device command 127 (2026-12-06; results in run127/). The submitted build
# (final/: `d358353` with, under DBUF at AHEAD 1 only, the block after the
# next loaded once the next is in the tiles) against `d358353` (prev/),
# carried in .carry/bins127.tar.xz; one command: final's tensor-core
# tests on the card; the matmul rows of each build alternated, two rounds;
# the nanoGPT step of each, one round. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins127.tar.xz -C .carry || exit 1
R=/tmp/r127; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/final/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for rnd in 1 2; do
  for b in prev final; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for b in prev final; do
  timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-1.json 2> $R/shape-nanogpt-$b-1.err; echo "nanogpt $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary121.py $R | grep -v "^    " | grep "square\|train" | grep -v "f16-compute\|f32 \[" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
