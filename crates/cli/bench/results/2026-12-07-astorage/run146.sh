#!/bin/bash
# Device command 146 (2026-12-07; results in run146/). Builds: H0 (the
# submitted HEAD, 769fbaa: its step never measured), N2 (H0 plus the
# `A_STORAGE` forms of matmul_coop_tiled.wgsl — `tiled-as`,
# `tiled-wide-as`, `tiled-tall-as`: each subgroup loads its op(A)
# fragments straight from the staged operand a block ahead, only op(B)'s
# block goes through workgroup memory, two blocks of it, one barrier a
# block). What matters first comes first: the matmul rows (4096³ on every
# form); the nanoGPT step on H0, N2 and N2's new forms; N2's matmul and
# training tests on the card; N2's profile (driver statistics); H0's
# matmul rows; PyTorch's nanoGPT training; N2's attention and reuse tests.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r146; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
el() { echo "$1 rc=$2 $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
timeout 90 N2/tinygpt bench --shape matmuls > $R/matmuls-N2.json 2> $R/matmuls-N2.err; el "matmuls N2" $?; save
python3 summary.py $R | grep "square" | cut -c1-120
timeout 60 H0/tinygpt bench --shape nanogpt > $R/shape-nanogpt-H0.json 2> $R/shape-nanogpt-H0.err; el "nanogpt H0" $?
timeout 60 N2/tinygpt bench --shape nanogpt > $R/shape-nanogpt-N2.json 2> $R/shape-nanogpt-N2.err; el "nanogpt N2" $?; save
for k in tiled-tall-as tiled-as tiled-wide-as; do
  timeout 60 N2/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-N2-$k.json 2> $R/shape-nanogpt-N2-$k.err; el "nanogpt N2 $k" $?
done; save
python3 summary.py $R | grep "^train" | grep -v "f16-\|f32"
for t in matmul_coop coop_training; do
  timeout 150 N2/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; el "test $t" $?
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-200 | sort | uniq -c; save
done
timeout 100 N2/tinygpt bench --profile --shape nanogpt --pipeline-stats --coop-kernel tiled-tall-as > $R/profile-N2-tall-as.json 2> $R/profile-N2-tall-as.err; el "profile N2 tall-as" $?; save
timeout 90 H0/tinygpt bench --shape matmuls > $R/matmuls-H0.json 2> $R/matmuls-H0.err; el "matmuls H0" $?; save
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; el pytorch $?; save
for t in attention_coop coop_reuse; do
  timeout 60 N2/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; el "test $t" $?
  grep -h "FAILED\|panicked\|test result" $R/test-$t.txt | cut -c1-200 | sort | uniq -c; save
done
python3 summary.py $R | grep -v "^matmul\|^    regs" ; python3 summary.py $R | grep "regs.*_as\|regs.*ahead" 
el all 0
