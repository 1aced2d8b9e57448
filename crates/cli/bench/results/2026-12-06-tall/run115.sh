#!/bin/bash
# Device command 115 (2026-12-06; results in run115/). The build `9f7c5f5`
# carried in .carry/bins115.tar.xz: the tensor-core matmul's tests on the
# card (every form, the new TM 256 ones included: the golden bound and the
# base form's bits), `bench --shape matmuls` twice (every form at 4096³ and
# the nanoGPT linears), the nanoGPT step on tiled-ahead3 (the engine's) and
# the two tall forms, PyTorch's nanoGPT training in the same command.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins115.tar.xz -C .carry || exit 1
R=/tmp/r115; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for t in matmul_coop coop_reuse; do
  timeout 120 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
grep -h "test result" $R/test-*.txt
save
cd .carry
for rnd in 1 2; do
  timeout 120 new/tinygpt bench --shape matmuls > $R/matmuls-$rnd.json 2> $R/matmuls-$rnd.err; echo "matmuls $rnd rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary102.py $R | grep "coop-matrix"
for rnd in 1 2; do
  for k in tiled-ahead3 tiled-tall tiled-tall-ahead2; do
    timeout 60 new/tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-$k-$rnd.json 2> $R/shape-nanogpt-$k-$rnd.err; echo "nanogpt $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
  [ $rnd = 1 ] && { timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save; }
done
python3 summary102.py $R | grep "^train\|pytorch"
echo "all: $(( $(date +%s) - t0 ))s"
