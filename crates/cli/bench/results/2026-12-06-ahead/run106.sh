#!/bin/bash
# Device command 106 (2026-12-06; results in run106/). The build carried in
# .carry/bins106.tar.xz: the decode attention's dispatch adds workgroups
# that load the weights of the GEMVs after it (its layer's projection, fc
# and fc projection, the next layer's QKV) into L2 while its few heads'
# workgroups run (`shaders/l2_ahead.wgsl`, `ops::ahead`) — against the
# submitted build of run 104 (.carry/bins105.tar.xz, `d819f7f`), one after
# the other, two rounds; the attention and decode tests on the card (the
# same bits with and without the loads ahead); the decode profile;
# PyTorch's KV-cache + CUDA-graph decoder in the same command.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p .carry/old && tar -xJf .carry/bins105.tar.xz -C .carry/old || exit 1
tar -xJf .carry/bins106.tar.xz -C .carry || exit 1
R=/tmp/r106; mkdir -p $R $OUT
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
  for s in small nanogpt; do bench . new $s $rnd; bench old old $s $rnd; done; save
done
for s in small nanogpt; do
  timeout 30 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|pytorch_decode\|decode_chain \|decode_chain_sub\|attention_decode"
echo "all: $(( $(date +%s) - t0 ))s"
