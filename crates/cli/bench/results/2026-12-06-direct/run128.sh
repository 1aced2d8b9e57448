#!/bin/bash
# Device command 128 (2026-12-06; results in run128/). The tensor-core
# matmul's tiles inside C stored straight from their accumulators (scale,
# bias and accumulation as cooperative-matrix arithmetic; new/) against
# `114f5cf` (prev/), and a diagnostic build that stores nothing (noepi/:
# what the epilogue costs; its results are wrong). Carried in
# .carry/bins128.tar.xz; one command: new's tensor-core tests on the card;
# PyTorch's nanoGPT training; the matmul rows of each build alternated,
# two rounds; the nanoGPT step of prev and new, two rounds; `small` and
# `tiny` of each; new's profile. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins128.tar.xz -C .carry || exit 1
R=/tmp/r128; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in prev new noepi; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for rnd in 1 2; do
  for b in prev new; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for s in small tiny; do
  for b in prev new; do
    timeout 60 $b/tinygpt bench --shape $s > $R/shape-$s-$b-1.json 2> $R/shape-$s-$b-1.err; echo "$s $b rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 90 new/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep -v "^    " | grep "square\|train\|pytorch\|fc\|qkv\|proj" | grep "tiled-ahead3\|tiled-tall \|train\|pytorch" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
