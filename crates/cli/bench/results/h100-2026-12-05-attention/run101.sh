#!/bin/bash
# Device command 101 (2026-12-05; results in run101/). The build carried in
# .carry/bins101.tar.xz (`77e335a`): the attention's backward on tensor
# cores on by default, and the tensor-core gate's four attention cases
# (gate/coop_attention.rs) — never run on a card before. Their tests and
# the tensor-core gate's on the card; `tinygpt gate`; the steps at the
# default settings (and nanoGPT with `--coop-attention off`), two rounds;
# PyTorch's training in the same command. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins101.tar.xz -C .carry || exit 1
R=/tmp/r101; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
  grep -h "DID NOT\|FAILED\|panicked\|test result\|coop-matrix gate attention\|coop-matrix gate:" $R/test-$t.txt | cut -c1-260
done
cd .carry; save
timeout 120 ./tinygpt gate > $R/gate.txt 2>&1; echo "gate rc=$? $(( $(date +%s) - t0 ))s"
grep -h "coop-matrix" $R/gate.txt | grep -v "training gate step" | cut -c1-260; save
bench() { # shape, attention (on/off), round
  timeout 60 ./tinygpt --coop-attention $2 bench --shape $1 > $R/shape-$1-$2-$3.json 2> $R/shape-$1-$2-$3.err; echo "$1 attention-$2 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
bench nanogpt on 1; bench nanogpt off 1; bench small on 1; save
timeout 90 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
# A second round only if the first took under 200 s (device time was short).
[ $(( $(date +%s) - t0 )) -lt 200 ] && { bench nanogpt on 2; bench nanogpt off 2; bench small on 2; save; }
python3 summary97.py $R | grep -v "f16-compute\| forward" | grep "train\|pytorch"
echo "all: $(( $(date +%s) - t0 ))s"
