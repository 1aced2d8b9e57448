#!/bin/bash
# Device command 140 (2026-12-07; results in run140/). Builds: F/ from
# .carry/bins139.tar.xz (`e7361a7`); F2/ from .carry/bins140.tar.xz (F
# with the tensor-core matmul's pipelines compiled per product shape — M,
# N and K as pipeline constants MC, NC, KC — so that the driver knows
# the K loop's trip count, the copies' strides and the epilogue's
# bounds). F2's matmul, reuse and training tests on the card; the matmul
# rows of F and F2; the nanoGPT step of F and F2, two rounds; PyTorch's
# nanoGPT training; F2's profile with the driver's statistics. Carry:
# .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 139 140; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r140; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 100 .carry/F2/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-160 | sort | uniq -c
done
save
cd .carry
for b in F F2; do
  timeout 120 $b/tinygpt bench --shape matmuls > $R/matmuls-$b.json 2> $R/matmuls-$b.err; echo "matmuls $b rc=$? $(( $(date +%s) - t0 ))s"; save
done
for rnd in 1 2; do
  for b in F F2; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 100 F2/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-F2.json 2> $R/profile-F2.err; echo "profile F2 rc=$? $(( $(date +%s) - t0 ))s"; save
grep -h "coop-matrix gate:" $R/shape-nanogpt-*-1.err | cut -c1-200
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|pytorch\|square\|nanogpt fc\|nanogpt qkv\|nanogpt proj" | grep -v "f16-\|f32  \|direct\|nanogpt f32" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
