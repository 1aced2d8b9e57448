#!/bin/bash
# Device command 104 (2026-12-06; results in run104/). Run 103 found the
# decode attention slower in its profile (a call 13.7 → 14.7 µs at
# nanoGPT) while the chains got faster: its new position read through a
# branch at every key and value load. The build carried in
# .carry/bins104.tar.xz reads the new position's score and row outside
# the loops (`score_new`, `v4_new`), with a group's first eight rows of
# values loaded before the scores (`V_AHEAD`, the build `.`) and without
# (`noahead/`), against run 103's build (.carry/bins103.tar.xz), one after
# the other, two rounds; the decode and attention tests on the card; the
# decode profiles; PyTorch's KV-cache + CUDA-graph decoder in the same
# command. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p .carry/r103 && tar -xJf .carry/bins103.tar.xz -C .carry/r103 || exit 1
tar -xJf .carry/bins104.tar.xz -C .carry || exit 1
R=/tmp/r104; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode attention; do
  timeout 60 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
cd .carry
bench() { # build dir, its name, shape, round
  timeout 60 $1/tinygpt bench --shape $3 > $R/shape-$3-$2-$4.json 2> $R/shape-$3-$2-$4.err; echo "$3 $2 $4 rc=$? $(( $(date +%s) - t0 ))s"
}
for rnd in 1 2; do
  for s in small nanogpt; do bench . new $s $rnd; bench noahead noahead $s $rnd; bench r103 r103 $s $rnd; done; save
done
for s in small nanogpt; do
  timeout 30 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|pytorch_decode\|decode_chain \|decode_chain_sub\|attention_decode"
echo "all: $(( $(date +%s) - t0 ))s"
