#!/bin/bash
# Device command 91 (2026-12-05, nvidia-h100-x1; results in run91/). One
# build (`tinygpt`, this commit): every pipeline with wgpu's shader checks
# (`--shader-checks full`, as before) against none (`none`) and against
# each left out alone (`loops`, `bounds`, `div`, `zero`): the matmul rows,
# tiny's training and persistent decoder (two rounds), small and nanogpt
# full against none; the tensor-core and decoder tests on the card with
# TINYGPT_SHADER_CHECKS=none; PyTorch's decoders and fp32/TF32 training.
# Carry: .gl, .carry (bins.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r91; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse decode_persistent decode gpu_model; do
  TINYGPT_SHADER_CHECKS=none timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked\|shader checks" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
for c in full none loops; do
  timeout 90 ./tinygpt bench --shape matmuls --shader-checks $c > $R/matmuls-$c.json 2> $R/matmuls-$c.err; echo "matmuls $c rc=$? $(( $(date +%s) - t0 ))s"
done; save
for rnd in 1 2; do
  for c in full none loops bounds div zero; do
    timeout 60 ./tinygpt bench --shape tiny --decoder persistent --shader-checks $c > $R/shape-tiny-$c-$rnd.json 2> $R/shape-tiny-$c-$rnd.err; echo "tiny $c $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for rnd in 1 2; do
  for c in full none; do
    timeout 60 ./tinygpt bench --shape small --shader-checks $c > $R/shape-small-$c-$rnd.json 2> $R/shape-small-$c-$rnd.err; echo "small $c $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for c in full none; do
  timeout 90 ./tinygpt bench --shape nanogpt --shader-checks $c > $R/shape-nanogpt-$c-1.json 2> $R/shape-nanogpt-$c-1.err; echo "nanogpt $c rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 30 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch_baseline rc=$? $(( $(date +%s) - t0 ))s"
save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 /work/main/crates/cli/bench/results/h100-2026-12-05-checks/summary.py $R
echo "all: $(( $(date +%s) - t0 ))s"
