#!/bin/bash
# Device command 109 (2026-12-06; results in run109/). `small` alone, to
# pin its ratio: the submitted build (run 108's `.`, .carry/bins108.tar.xz)
# against run 107's candidate (`r107/`), alternating, four rounds, with
# PyTorch's KV-cache + CUDA-graph decoder (`small` only) before, between
# and after. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins108.tar.xz -C .carry || exit 1
R=/tmp/r109; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
torch() { timeout 60 python3 pytorch_decode.py --configs small --tokens 200 >> $R/pytorch_decode.jsonl 2>> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; }
bench() { # build dir, its name, round
  timeout 60 $1/tinygpt bench --shape small > $R/shape-small-$2-$3.json 2> $R/shape-small-$2-$3.err; echo "small $2 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
./tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU for the first timed bench
torch
for rnd in 1 2 3 4; do
  bench . new $rnd; bench r107 r107 $rnd; save
  [ $rnd = 2 ] && torch
done
torch; save
python3 summary102.py $R | grep "greedy 1\|pytorch_decode"
echo "all: $(( $(date +%s) - t0 ))s"
