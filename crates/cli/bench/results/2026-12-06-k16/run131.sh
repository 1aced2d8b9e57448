#!/bin/bash
# Device command 131 (2026-12-06; results in run131/). new/: the tiled
# kernel's K block a pipeline constant (KB) and three forms on it —
# tiled-tall-2buf-k16, tiled-tall-2buf-k16-ahead2, tiled-tall-ahead2-sw8
# and (16-byte operand loads) tiled-tall-ahead2-ld16 and tiled-ahead3-ld16;
# prev/: `d5e2f44` (run 130's final build), carried in
# .carry/bins131.tar.xz. One command: new's tensor-core tests on the card;
# the matmul rows of prev, new, diag, new; the nanoGPT step of new
# on the engine's form and on the new forms. diag/: new with three of its
# forms replaced by diagnostics of tiled-tall-ahead2 (`DIAG`, not
# committed): every block loaded from the first block's addresses, one
# product a step, no barriers in the K loop. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins131.tar.xz -C .carry || exit 1
R=/tmp/r131; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for br in prev-1 new-1 diag-1 new-2; do
  b=${br%-*}
  timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$br.json 2> $R/matmuls-$br.err; echo "matmuls $br rc=$? $(( $(date +%s) - t0 ))s"; save
done
python3 summary121.py $R | grep "square" | grep "tall\|ahead3\|diag" | cut -c1-150
for k in tiled-ahead3 tiled-ahead3-ld16 tiled-tall-2buf-k16-ahead2 tiled-tall-ahead2-ld16; do
  timeout 60 new/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-new-$k-1.json 2> $R/shape-nanogpt-new-$k-1.err; echo "nanogpt new $k rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
