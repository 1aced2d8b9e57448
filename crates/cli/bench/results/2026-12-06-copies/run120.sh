#!/bin/bash
# Device command 120 (2026-12-06; results in run120/). `57f2504` (new/: run 119's build with its bind groups fixed,
# the GELU epilogue's f16 copy four halves a write, the wide A_KM
# pipeline's passes 2-3 fixed) against run 118's `db2a25d` (mid/) and the
# submitted `b4ecafa` (prev/), carried in .carry/bins120.tar.xz, in one
# command: the new build's tensor-core matmul, reuse and training tests on
# the card; the nanoGPT step on each build alternated, three rounds, and
# the `small` step; the new build's per-dispatch profile of the nanoGPT
# step; PyTorch's nanoGPT training. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins120.tar.xz -C .carry || exit 1
R=/tmp/r120; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for rnd in 1 2 3; do
  for b in prev mid new; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for b in prev new; do
  timeout 60 $b/tinygpt bench --shape small > $R/shape-small-$b-1.json 2> $R/shape-small-$b-1.err; echo "small $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 90 new/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary102.py $R | grep "^train\|pytorch"
echo "all: $(( $(date +%s) - t0 ))s"
