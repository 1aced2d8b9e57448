#!/bin/bash
# Device command 148 (2026-12-07; results in run148/). Builds: H0 (8066236:
# the kernels of 769fbaa, as submitted), H1 (9c12519: the tensor-core
# attention's grid with the row blocks slowest, the heaviest first — the
# same products, so the same bits). The attention rows alone and the
# nanoGPT step on both, alternating; both profiles; H1's attention and
# training tests on the card; PyTorch's nanoGPT training.
# Carry: .gl, .carry (summary.py: ../2026-12-07-astorage/summary.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r148; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
el() { echo "$1 rc=$2 $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
step() {
  timeout 60 $1/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$1-$2.json 2> $R/shape-nanogpt-$1-$2.err; el "nanogpt $1 $2" $?; save
}
att() {
  timeout 60 $1/tinygpt bench --attention-only --shape nanogpt > $R/attention-$1-$2.json 2> $R/attention-$1-$2.err; el "attention $1 $2" $?; save
}
step H0 1; step H1 1
python3 summary.py $R | grep "^train" | grep -v "f16-\|f32"
att H0 1; att H1 1
timeout 60 H1/tinygpt bench --profile --shape nanogpt > $R/profile-H1.json 2> $R/profile-H1.err; el "profile H1" $?; save
timeout 60 H0/tinygpt bench --profile --shape nanogpt > $R/profile-H0.json 2> $R/profile-H0.err; el "profile H0" $?; save
for t in attention_coop coop_training; do
  timeout 100 H1/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; el "test $t" $?
  grep -h "FAILED\|panicked\|test result\|DID NOT RUN" $R/test-$t.txt | cut -c1-200 | sort | uniq -c; save
done
step H1 2; step H0 2
att H1 2; att H0 2
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; el pytorch $?; save
python3 summary.py $R | grep -v "^matmul\|^    regs"
el all 0
