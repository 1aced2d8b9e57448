#!/bin/bash
# Device command 18: the tensor-core training path (issue #15) on the H200
# again (run 17's results were lost with its session): its tests (release
# binaries built here: the scaled staging, the gate with its 200-step
# training gate, a model on tensor cores vs f32; the coop kernel's own
# tests), `tinygpt bench` (coop-matrix, f16-compute and f32 training rows),
# PyTorch's training anchors, then the nanoGPT-protocol quality run on the
# gated paths (`--fast-paths`), stopped after ~3 minutes (past step 1,500,
# where the f32 run had its best validation loss).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 TINYGPT_REQUIRE_GPU=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for t in coop_training matmul_coop; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
save
cd .carry
timeout 240 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(t['config'], t['path'], round(t['ms_per_step'],3), t['final_loss']) for t in d['train']]"
timeout 120 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "before quality: $(( $(date +%s) - t0 ))s"
timeout 180 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$?"; save
echo "all: $(( $(date +%s) - t0 ))s"
grep -h "test result\|DID NOT\|FAILED\|panicked\|unscaled\|scaled:\|coop-matrix" $R/test-*.txt | cut -c1-250
grep -h "coop-matrix\|f16-\|fast paths" $R/quality.err | cut -c1-200
grep -h "val" $R/quality.jsonl | cut -c1-160
cut -c1-200 $R/pytorch.jsonl
