#!/bin/bash
# Device command 117 (2026-12-06; results in run117/). `84f2f11` (new/:
# the tensor-core epilogue behind subgroup barriers) against run 116's
# `75a6515` (prev/), carried in .carry/bins117.tar.xz, in one command: the
# new build's tensor-core matmul and training tests, `bench --shape
# matmuls` and the nanoGPT step on each, alternated. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins117.tar.xz -C .carry || exit 1
R=/tmp/r117; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_training; do
  timeout 120 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | head
save
cd .carry
for rnd in 1 2; do
  for b in prev new; do
    timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 summary102.py $R | grep "coop-matrix" | grep "ahead3\|tall"
for rnd in 1 2; do
  for bk in prev:tiled-ahead3 new:tiled-ahead3 new:tiled-tall; do
    b=${bk%%:*}; k=${bk#*:}
    timeout 60 $b/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-$b~$k-$rnd.json 2> $R/shape-nanogpt-$b~$k-$rnd.err; echo "nanogpt $b $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary102.py $R | grep "^train nanogpt .* coop-matrix"
echo "all: $(( $(date +%s) - t0 ))s"
