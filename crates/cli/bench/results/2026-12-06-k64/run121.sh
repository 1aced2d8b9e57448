#!/bin/bash
# Device command 121 (2026-12-06; results in run121/). `3af16de` (new/:
# the tensor-core attention's subgroup barriers, dkv's kept weights, the
# forward's two-lane row folds; the tiled matmul's 64-wide K blocks, forms
# `tiled-k64`, `tiled-k64-ahead2`) against `57f2504` (prev/, run 120's
# new build), carried in .carry/bins121.tar.xz, in one command: the new
# build's tensor-core tests on the card; the matmul rows of each build
# alternated, two rounds; the nanoGPT step (and the attention rows) of
# each, two rounds, and on the k64 forms; the new build's profile;
# PyTorch's nanoGPT training. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins121.tar.xz -C .carry || exit 1
R=/tmp/r121; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse attention_coop coop_training; do
  timeout 150 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in prev new; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for rnd in 1 2; do
  for b in prev new; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
  for k in k64 k64-ahead2; do
    timeout 60 new/tinygpt bench --shape nanogpt --coop-kernel tiled-$k > $R/shape-nanogpt-new$k-$rnd.json 2> $R/shape-nanogpt-new$k-$rnd.err; echo "nanogpt $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 90 new/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep -v "^    " | grep "4096\|train\|attention\|pytorch" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
