#!/bin/bash
# Device command 122 (2026-12-06; results in run122/). `38cfcbb` (new/:
# the MLP's dX product with GELU′ in its epilogue, writing dpre's f16
# copy; every dX product staging W as it is) against `3af16de` (prev/,
# run 121's new build) and `3af16de` with only the dX products' W staged
# (staged/), carried in .carry/bins122.tar.xz, in one command: the new
# build's tensor-core tests on the card; PyTorch's nanoGPT training; the
# nanoGPT step on each build alternated, three rounds; the `small` step;
# the new build's profile. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins122.tar.xz -C .carry || exit 1
R=/tmp/r122; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop_gelu_grad matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2 3; do
  for b in prev staged new; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for b in prev new; do
  timeout 60 $b/tinygpt bench --shape small > $R/shape-small-$b-1.json 2> $R/shape-small-$b-1.err; echo "small $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 90 new/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep "^train\|pytorch\|attention nanogpt new\|train_step\|     " | cut -c1-150 | head -70
echo "all: $(( $(date +%s) - t0 ))s"
