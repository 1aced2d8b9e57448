#!/bin/bash
# Device command 92 (2026-12-05, nvidia-h100-x1; results in run92/). The
# build of run 91 with the engine's new default (pipelines without wgpu's
# shader checks): small's decoder on each layout (`prologue`, `fused`,
# `stack`, `persistent`; two rounds) and nanogpt's on `prologue` and
# `fused`, since the checks weighed most on the kernels with loops;
# profiles of tiny's step and token, small's token on `prologue` and
# `fused`, nanogpt's step; PyTorch's decoders.
# Carry: .gl, .carry (bins.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r92; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for rnd in 1 2; do
  for d in prologue fused stack persistent; do
    timeout 60 ./tinygpt bench --shape small --decoder $d > $R/shape-small-$d-$rnd.json 2> $R/shape-small-$d-$rnd.err; echo "small $d $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for d in prologue fused; do
  timeout 90 ./tinygpt bench --shape nanogpt --decoder $d > $R/shape-nanogpt-$d-1.json 2> $R/shape-nanogpt-$d-1.err; echo "nanogpt $d rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 60 ./tinygpt bench --profile --shape tiny > $R/profile-tiny.json 2> $R/profile-tiny.err; echo "profile tiny rc=$? $(( $(date +%s) - t0 ))s"
for d in prologue fused; do
  timeout 60 ./tinygpt bench --profile --decode-only --shape small --decoder $d > $R/profile-small-$d.json 2> $R/profile-small-$d.err; echo "profile small $d rc=$? $(( $(date +%s) - t0 ))s"
done
timeout 90 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile nanogpt rc=$? $(( $(date +%s) - t0 ))s"
save
timeout 90 python3 pytorch_decode.py --configs small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 /work/main/crates/cli/bench/results/h100-2026-12-05-checks/summary.py $R
echo "all: $(( $(date +%s) - t0 ))s"
