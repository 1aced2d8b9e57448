#!/bin/bash
# Device command 107 (2026-12-06; results in run107/). The builds carried
# in .carry/bins107.tar.xz: run 106's loads ahead, now only where a
# token's GEMVs stream at least 32 MiB of weights (`loads_ahead`:
# nanoGPT's f32 weights), with greedy chunks of at most 8 tokens (`.`,
# the candidate), 16 (`c16/`) and 32 (`c32/`) — against the submitted
# build of run 104 (.carry/bins105.tar.xz, `d819f7f`), one after the
# other, two rounds, every shape; the attention and decode tests on the
# card; PyTorch's KV-cache + CUDA-graph decoder in the same command.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p .carry/old && tar -xJf .carry/bins105.tar.xz -C .carry/old || exit 1
tar -xJf .carry/bins107.tar.xz -C .carry || exit 1
R=/tmp/r107; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention decode; do
  timeout 60 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
cd .carry
bench() { # build dir, its name, shape, round
  timeout 60 $1/tinygpt bench --shape $3 > $R/shape-$3-$2-$4.json 2> $R/shape-$3-$2-$4.err; echo "$3 $2 $4 rc=$? $(( $(date +%s) - t0 ))s"
}
for rnd in 1 2; do
  for s in tiny small nanogpt; do bench . new $s $rnd; bench c16 c16 $s $rnd; bench c32 c32 $s $rnd; bench old old $s $rnd; done; save
done
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|pytorch_decode\|train"
echo "all: $(( $(date +%s) - t0 ))s"
