#!/bin/bash
# Device command 147 (2026-12-07; results in run147/). Builds: H0 (the
# submitted HEAD, 769fbaa, as in run 146), L1 (H0 plus the LayerNorm
# backward's dx and dw/db partials in one dispatch,
# layernorm_backward_fused.wgsl: the same bits, dout and x read once).
# The nanoGPT step on H0 and L1, twice each, alternating; L1's profile;
# L1's LayerNorm tests (the fused form's bits against the two dispatches')
# and training tests on the card; PyTorch's nanoGPT training.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r147; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
el() { echo "$1 rc=$2 $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
# (Reordered after four starts found no machine: what matters first.)
step() {
  timeout 60 $1/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$1-$2.json 2> $R/shape-nanogpt-$1-$2.err; el "nanogpt $1 $2" $?; save
}
step H0 1; step L1 1
python3 summary.py $R | grep "^train" | grep -v "f16-\|f32"
timeout 60 L1/tests/layernorm --test-threads 1 --nocapture > $R/test-layernorm.txt 2>&1; el "test layernorm" $?
grep -h "FAILED\|panicked\|test result\|bit for bit\|did not run" $R/test-layernorm.txt | cut -c1-200 | sort | uniq -c; save
timeout 100 L1/tinygpt bench --profile --shape nanogpt > $R/profile-L1.json 2> $R/profile-L1.err; el "profile L1" $?; save
step L1 2; step H0 2
timeout 100 L1/tests/coop_training --test-threads 1 --nocapture > $R/test-coop_training.txt 2>&1; el "test coop_training" $?
grep -h "FAILED\|panicked\|test result" $R/test-coop_training.txt | cut -c1-200 | sort | uniq -c; save
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; el pytorch $?; save
python3 summary.py $R | grep -v "^matmul\|^    regs"
el all 0
