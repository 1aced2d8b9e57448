#!/bin/bash
# Device command 97 (written 2026-12-05 for the next session with a device;
# the build `25243a3`;
# results in run97/). The build carried in .carry/bins97.tar.xz: the
# tensor-core attention's tests on the card (and the tensor-core matmul,
# reuse and training tests, with the two forms loading ahead that run 96
# never ran), `tinygpt info`, the gate with `--coop-attention` (its
# 200-step training gate then trains with the attention on tensor cores),
# `bench --shape` small and nanogpt without and with `--coop-attention`
# alternating (the attention rows time both kernels' families), the step on
# the two ahead forms, the nanoGPT profile with it, PyTorch's training in
# the same command. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins97.tar.xz -C .carry || exit 1
R=/tmp/r97; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
grep -h "worst error\|losses" $R/test-attention_coop.txt | cut -c1-200 | head -30
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
./tinygpt info > $R/info.json 2>&1; grep -h "coop\|device" $R/info.json
timeout 120 ./tinygpt --coop-attention gate > $R/gate.txt 2>&1; echo "gate rc=$? $(( $(date +%s) - t0 ))s"
grep -h "coop-matrix" $R/gate.txt | cut -c1-220
save
for rnd in 1 2; do
  for s in nanogpt small; do
    [ $rnd = 2 ] && [ $s = small ] && continue
    for a in off on; do
      flag=""; [ $a = on ] && flag="--coop-attention"
      timeout 90 ./tinygpt $flag bench --shape $s > $R/shape-$s-$a-$rnd.json 2> $R/shape-$s-$a-$rnd.err; echo "$s attention-$a $rnd rc=$? $(( $(date +%s) - t0 ))s"
    done
  done; save
  [ $rnd = 1 ] && { timeout 150 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save; }
done
for k in tiled-ahead3 tiled-wide-2buf-ahead2; do
  timeout 60 ./tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-$k.json 2> $R/shape-nanogpt-$k.err; echo "nanogpt $k rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 45 ./tinygpt --coop-attention bench --profile --shape nanogpt > $R/profile-nanogpt-on.json 2> $R/profile-nanogpt-on.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary97.py $R
echo "all: $(( $(date +%s) - t0 ))s"
