#!/bin/bash
# Device command 110 (2026-12-06; results in run110/). The builds carried
# in .carry/bins110.tar.xz: `new/` — the decode attention's max and sum
# through workgroup memory in two barriers each (was ten; the same tree,
# the same bits) and the greedy pick by workgroup atomics (no thread
# combining others' bests one after another) — against `old/` (ec6af6a,
# run 108's submitted build), one after the other: `small` three rounds,
# `tiny` and nanoGPT two; the decoder's tests on the card; the decode
# profiles of both builds; PyTorch's KV-cache + CUDA-graph decoder before
# and after. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins110.tar.xz -C .carry || exit 1
R=/tmp/r110; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in greedy_pick head_pick sample_pick attention subgroups decode_qkv decode decode_persistent; do
  timeout 90 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
cd .carry
bench() { # build, shape, round
  timeout 60 $1/tinygpt bench --shape $2 > $R/shape-$2-$1-$3.json 2> $R/shape-$2-$1-$3.err; echo "$2 $1 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
new/tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU for the first timed bench
for rnd in 1 2 3; do
  bench new small $rnd; bench old small $rnd
  if [ $rnd -lt 3 ]; then for s in tiny nanogpt; do bench new $s $rnd; bench old $s $rnd; done; fi
  save
done
for b in new old; do
  timeout 30 $b/tinygpt bench --profile --decode-only --shape small > $R/profile-small-$b.json 2> $R/profile-small-$b.err; echo "profile small $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 >> $R/pytorch_decode.jsonl 2>> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|pytorch_decode\|decode_chain \|decode_chain_sub\|attention_decode\|greedy_pick"
echo "all: $(( $(date +%s) - t0 ))s"
