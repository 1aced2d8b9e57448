#!/bin/bash
# Device command 138 (2026-12-07; results in run138/). Builds from
# .carry/bins138.tar.xz: fin/ (run138-fin.patch on `05a264a` — the
# one-pass tensor-core forward rescaling its accumulators every block
# after the first, no branch; the attention kernels' blocks loaded
# straight into their tiles; the training graph binding the tensor-core
# forward; the gate's forward cases — plus the tiled matmul's `short`
# forms: 64×128 tiles at WG 128, so that several workgroups share an SM);
# cur/ from run 137's bins137 (`61f4c88`). fin's tests on the card; the
# 4096³ and nanoGPT-shaped matmul rows of every form; the attention rows
# of cur and fin; the nanoGPT step of cur, fin and fin on each short
# form; PyTorch's nanoGPT training; fin's profile with the driver's
# statistics. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
for b in 137 138; do tar -xJf .carry/bins$b.tar.xz -C .carry || exit 1; done
R=/tmp/r138; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop matmul_coop coop_training coop_reuse; do
  timeout 100 .carry/fin/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-160 | sort | uniq -c
done
save
cd .carry
timeout 120 fin/tinygpt bench --shape matmuls > $R/matmuls-fin.json 2> $R/matmuls-fin.err; echo "matmuls fin rc=$? $(( $(date +%s) - t0 ))s"; save
for b in cur fin; do
  timeout 60 $b/tinygpt bench --attention-only --shape nanogpt > $R/att-$b.json 2> $R/att-$b.err; echo "att $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
for k in default tiled-short tiled-short-ahead2 tiled-short-2buf; do
  for b in cur fin; do
    [ $b = cur ] && [ $k != default ] && continue
    a=""; [ $k != default ] && a="--coop-kernel $k"
    timeout 60 $b/tinygpt bench --shape nanogpt $a > $R/shape-nanogpt-$b-$k.json 2> $R/shape-nanogpt-$b-$k.err; echo "nanogpt $b $k rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 100 fin/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-fin.json 2> $R/profile-fin.err; echo "profile fin rc=$? $(( $(date +%s) - t0 ))s"; save
grep -h "coop-matrix gate:" $R/shape-nanogpt-*.err | cut -c1-200
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|pytorch\|4096\|attention" | cut -c1-170
echo "all: $(( $(date +%s) - t0 ))s"
