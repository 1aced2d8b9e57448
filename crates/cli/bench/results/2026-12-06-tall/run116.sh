#!/bin/bash
# Device command 116 (2026-12-06; results in run116/). Run 115 put
# `tiled-ahead3` at 108 TFLOP/s at 4096³ where run 111 had 145.5: the
# submitted build of run 111 (`1bf7e05`, old/) and `75a6515` (new/: the
# TM 256 rows past M′ through the copy plan, no flag in the fetches),
# carried in .carry/bins116.tar.xz, alternated in one command — the new
# build's tensor-core matmul tests, `bench --shape matmuls` and the
# nanoGPT step on each. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins116.tar.xz -C .carry || exit 1
R=/tmp/r116; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 .carry/new/tests/matmul_coop --test-threads 1 --nocapture > $R/test-matmul_coop.txt 2>&1; echo "test matmul_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "FAILED\|panicked\|test result" $R/test-*.txt | cut -c1-220 | head
cd .carry
for rnd in 1 2; do
  for b in old new; do
    timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 summary102.py $R | grep "coop-matrix" | grep "square\|fc"
for rnd in 1 2; do
  for bk in old:tiled-ahead3 new:tiled-ahead3 new:tiled-tall new:tiled-tall-ahead2; do
    b=${bk%%:*}; k=${bk#*:}
    timeout 60 $b/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-$b~$k-$rnd.json 2> $R/shape-nanogpt-$b~$k-$rnd.err; echo "nanogpt $b $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary102.py $R | grep "^train nanogpt .* coop-matrix"
echo "all: $(( $(date +%s) - t0 ))s"
