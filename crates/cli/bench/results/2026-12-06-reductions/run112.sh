#!/bin/bash
# Device command 112 (2026-12-06; results in run112/). `small` alone, to
# pin its ratio on the submitted build: `new/` of .carry/bins110.tar.xz
# against `old/` (ec6af6a), alternating, four rounds, PyTorch's KV-cache +
# CUDA-graph decoder before, between and after; each bench's launch floor
# is in its JSON (the card's clock moves it). Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins110.tar.xz -C .carry || exit 1
R=/tmp/r112; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
torch_decode() { timeout 60 python3 pytorch_decode.py --configs small --tokens 200 >> $R/pytorch_decode.jsonl 2>> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; }
bench() { # build, round
  timeout 60 $1/tinygpt bench --shape small > $R/shape-small-$1-$2.json 2> $R/shape-small-$1-$2.err; echo "small $1 $2 rc=$? $(( $(date +%s) - t0 ))s"
}
new/tinygpt bench --shape small > /dev/null 2>&1 # a warm GPU for the first timed bench
torch_decode
for rnd in 1 2 3 4; do
  bench new $rnd; bench old $rnd
  [ $rnd = 2 ] && torch_decode
  save
done
torch_decode; save
python3 summary102.py $R | grep "greedy 1\|pytorch_decode"
echo "all: $(( $(date +%s) - t0 ))s"
