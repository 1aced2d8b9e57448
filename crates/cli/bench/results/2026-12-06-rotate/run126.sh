#!/bin/bash
# Device command 126 (2026-12-06; results in run126/). Run 125's register
# sets taken in turn undone (the loop of `d358353` again, AHEAD's blocks
# moving up a set each block); kept from it: under DBUF the block after
# the next is loaded once the next is in the tiles, and the tiles' order
# (GROUP_M). Builds g0, g8, g16 (GROUP_M 0, 8, 16) against
# `d358353` (prev/); carried in .carry/bins126.tar.xz; one command: g8's
# tensor-core tests on the card; PyTorch's nanoGPT training; the matmul
# rows of each build alternated, two rounds; the nanoGPT step of prev and
# g8, two rounds, and of g8 on `tiled-tall` and `tiled-2buf`, one; `small`
# and `tiny` of prev and g8; g8's profile. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins126.tar.xz -C .carry || exit 1
rm -rf .carry/g4
R=/tmp/r126; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/g8/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in prev g0 g8 g16; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for rnd in 1 2; do
  for b in prev g8; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
  for k in tall 2buf; do
    [ $rnd = 2 ] && break
    timeout 60 g8/tinygpt bench --shape nanogpt --coop-kernel tiled-$k > $R/shape-nanogpt-g8$k-$rnd.json 2> $R/shape-nanogpt-g8$k-$rnd.err; echo "nanogpt g8 $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
  save
done
for s in small tiny; do
  for b in prev g8; do
    timeout 60 $b/tinygpt bench --shape $s > $R/shape-$s-$b-1.json 2> $R/shape-$s-$b-1.err; echo "$s $b rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 90 g8/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep -v "^    " | grep "square\|train\|pytorch" | grep -v "f16-compute\|f32 \[" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
