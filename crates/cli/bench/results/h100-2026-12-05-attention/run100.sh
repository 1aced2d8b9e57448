#!/bin/bash
# Device command 100 (2026-12-05; results in run100/). The build carried in
# .carry/bins100.tar.xz (`d3656cd`, rebuilt 2026-12-05 23:30): after run 99's training with the
# tensor-core attention diverged (its loss gradients, ~1/(B·T), staged to
# f16 unscaled), the backward's gradients scaled by B·T as staged, the
# forward back on the f32 kernel (faster in runs 97 and 99), and the engine
# on `tiled-ahead3`. The attention tests on the card; `bench --shape`
# nanoGPT without and with `--coop-attention`; the nanoGPT-protocol
# quality run with it; small likewise; PyTorch's training in the same
# command; a second round of the four benches (the most needed first: the
# session had 457 s of device time left). Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins100.tar.xz -C .carry || exit 1
R=/tmp/r100; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 .carry/tests/attention_coop --test-threads 1 --nocapture > $R/test-attention_coop.txt 2>&1; echo "test attention_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "DID NOT\|FAILED\|panicked\|test result\|small gradients.*dqkv" $R/test-attention_coop.txt | cut -c1-200
cd .carry; save
bench() { # shape, attention (off/on), round
  flag=""; [ $2 = on ] && flag="--coop-attention"
  timeout 60 ./tinygpt $flag bench --shape $1 > $R/shape-$1-$2-$3.json 2> $R/shape-$1-$2-$3.err; echo "$1 attention-$2 $3 rc=$? $(( $(date +%s) - t0 ))s"
}
bench nanogpt off 1; bench nanogpt on 1; save
python3 summary97.py $R | grep "train coop-matrix\|coop d"
timeout ${QUALITY_S:-120} ./tinygpt --coop-attention train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop-attention.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$? $(( $(date +%s) - t0 ))s"; save
grep -h "coop-matrix speed\|coop-matrix training gate:\|error" $R/quality.err | cut -c1-200
python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))"
bench small off 1; bench small on 1; save
timeout 90 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
bench nanogpt off 2; bench nanogpt on 2; bench small off 2; bench small on 2; save
python3 summary97.py $R | grep -v "f16-compute\| f32 \| forward" | grep "coop-matrix\|coop \|pytorch"
echo "all: $(( $(date +%s) - t0 ))s"
