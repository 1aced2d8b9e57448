#!/bin/bash
# Device command 108 (2026-12-06; results in run108/). The builds carried
# in .carry/bins108.tar.xz: a greedy or sampled submission that continues
# the one before starts from the input row and position its last pick
# wrote (no copies, no embedding, one pass), with the chunks growing as
# the Fibonacci numbers (`.`, the candidate) or doubling (`dbl/`) —
# against run 107's candidate (`r107/`: the loads ahead from 32 MiB on),
# one after the other, two rounds, every shape; the decode tests on the
# card; PyTorch's KV-cache + CUDA-graph decoder in the same command.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins108.tar.xz -C .carry || exit 1
R=/tmp/r108; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode decode_persistent; do
  timeout 60 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
cd .carry
bench() { # build dir, its name, shape, round
  timeout 60 $1/tinygpt bench --shape $3 > $R/shape-$3-$2-$4.json 2> $R/shape-$3-$2-$4.err; echo "$3 $2 $4 rc=$? $(( $(date +%s) - t0 ))s"
}
./tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU for the first timed bench
for rnd in 1 2; do
  for s in tiny small nanogpt; do bench . new $s $rnd; bench dbl dbl $s $rnd; bench r107 r107 $s $rnd; done; save
done
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|pytorch_decode"
echo "all: $(( $(date +%s) - t0 ))s"
