#!/bin/bash
# Device command 16: the f16-compute lever (issue #15) on the H200 — its
# kernel tests and the loaded-model tests (release test binaries built
# here), `tinygpt gate` at the bundled shape and with the nanoGPT
# checkpoint (the speed gate timing the training forward against f32),
# `tinygpt bench` (f16-compute training and matmul rows), and PyTorch's
# training anchors in the same command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 TINYGPT_REQUIRE_GPU=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for t in matmul_f16c gate_model; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
save
B=$PWD/.carry/tinygpt
for i in 1 2; do timeout 60 $B gate > $R/gate-$i.txt 2>&1; echo "gate $i rc=$?"; done
timeout 90 $B gate --checkpoint models/nanogpt.safetensors > $R/gate-nanogpt.txt 2>&1; echo "gate nanogpt rc=$?"
save
cd .carry
timeout 300 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(t['config'], t['path'], round(t['ms_per_step'],3), t['final_loss']) for t in d['train']]; [print(m['shape'], m['path'], round(m['ms'],3), round(m['tflops'],1)) for m in d['matmul']]"
timeout 200 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
grep -h "f16-compute speed\|f16-storage speed" $R/gate-*.txt
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt
cut -c1-200 $R/pytorch.jsonl
