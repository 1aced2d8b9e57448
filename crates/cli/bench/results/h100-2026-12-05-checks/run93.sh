#!/bin/bash
# Device command 93 (2026-12-05, nvidia-h100-x1; results in run93/). The
# submitted build (pipelines without wgpu's shader checks by default):
# the tensor-core and persistent-decoder tests on the card; tiny on the
# engine's `persistent` decoder against `persistent-wide` (two rounds);
# the tensor-core step on the engine's `tiled` against `tiled-2buf` at
# small and nanogpt (two rounds); PyTorch's decoders and its training in
# fp32, TF32 and torch.compile, all in this one command.
# Carry: .gl, .carry (bins.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r93; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training decode_persistent; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
for rnd in 1 2; do
  for d in persistent persistent-wide; do
    timeout 60 ./tinygpt bench --shape tiny --decoder $d > $R/shape-tiny-$d-$rnd.json 2> $R/shape-tiny-$d-$rnd.err; echo "tiny $d $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
  for s in small nanogpt; do
    for k in tiled tiled-2buf; do
      timeout 90 ./tinygpt bench --shape $s --coop-kernel $k > $R/shape-$s-$k-$rnd.json 2> $R/shape-$s-$k-$rnd.err; echo "$s $k $rnd rc=$? $(( $(date +%s) - t0 ))s"
    done
  done; save
done
timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
timeout 240 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32,compile --steps 30 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch_baseline rc=$? $(( $(date +%s) - t0 ))s"
save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 /work/main/crates/cli/bench/results/h100-2026-12-05-checks/summary.py $R
echo "all: $(( $(date +%s) - t0 ))s"
