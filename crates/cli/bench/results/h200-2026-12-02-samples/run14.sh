#!/bin/bash
# Device command 14: the bias gradients inside the split-K weight gradients
# — `tinygpt bench` (training rows; sampling as in run 13), the per-dispatch
# profile of tiny and small (dispatch counts), and PyTorch's fp32 training
# anchor, in one command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
cd .carry
timeout 300 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
for s in tiny small; do timeout 120 ./tinygpt bench --profile --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"; done; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(t['config'], round(t['ms_per_step'],3)) for t in d['train']]; [print(s['config'], s['path'], s.get('mode'), s.get('samples'), round(s['sample_tokens_per_s'])) for s in d['sample']]"
for s in tiny small; do python3 -c "import json; d=json.load(open('$R/profile-$s.json')); [print(r['config'], r['what'], r['dispatches'], round(r['gpu_total_us'])) for r in d['profile']]"; done
timeout 120 python3 pytorch_baseline.py --configs tiny,small --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
cut -c1-200 $R/pytorch.jsonl
