#!/bin/bash
# Device command 129 (2026-12-06; results in run129/). The direct store
# (run 128) as a pipeline constant, DIRECT, per pipeline: dx — on (1) in
# every plain tiled pipeline but `tiled-ahead3`'s; dk — dx and the weight
# gradients' A_KM pipelines; dl — dk and `tiled-ahead3` with DIRECT 2
# (unbiased products only: no bias tile). prev/: `114f5cf`. Carried in
# .carry/bins129.tar.xz; one command: dl's tensor-core tests on the card;
# the nanoGPT step of prev (tiled-ahead3), dx on tiled-ahead3 (DIRECT 0
# there: prev's engine), dx and dk on tiled-tall-ahead2 and tiled-2buf,
# dl on tiled-ahead3, two rounds; the matmul rows of prev,
# dx and dl; `small` and `tiny` of prev, dk (tiled-tall-ahead2) and dl. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins129.tar.xz -C .carry || exit 1
R=/tmp/r129; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/dl/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
step() { # build kernel round
  timeout 60 $1/tinygpt bench --shape nanogpt --coop-kernel $2 > $R/shape-nanogpt-$1-$2-$3.json 2> $R/shape-nanogpt-$1-$2-$3.err
  echo "nanogpt $1 $2 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
for rnd in 1 2; do
  step prev tiled-ahead3 $rnd; step dx tiled-ahead3 $rnd; step dx tiled-tall-ahead2 $rnd; step dx tiled-2buf $rnd
  step dk tiled-tall-ahead2 $rnd; step dk tiled-2buf $rnd; step dl tiled-ahead3 $rnd
  save
done
for b in prev dx dl; do
  timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-1.json 2> $R/matmuls-$b-1.err; echo "matmuls $b rc=$? $(( $(date +%s) - t0 ))s"
done; save
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt" | grep coop | cut -c1-150
for s in small tiny; do
  for b in "prev tiled-ahead3" "dk tiled-tall-ahead2" "dl tiled-ahead3"; do
    set -- $b
    timeout 60 $1/tinygpt bench --shape $s --coop-kernel $2 > $R/shape-$s-$1-$2.json 2> $R/shape-$s-$1-$2.err; echo "$s $1 $2 rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary121.py $R | grep -v "^    " | grep "square\|train" | grep "coop\|square" | grep "tiled-ahead3\|tiled-tall-ahead2\|tiled-2buf \|train" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
