#!/bin/bash
# Device command 9: the GPU sampler with one running sum and parallel searches — `tinygpt bench`
# (greedy and top-k/top-p rows, f32 and f16 storage) with the PyTorch
# batch-1 decoder and training anchors, in one command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
cd .carry
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
timeout 300 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(s['config'], s['path'], s.get('mode'), round(s['sample_tokens_per_s'])) for s in d['sample']]; [print(t['config'], round(t['ms_per_step'],3)) for t in d['train']]; print(d.get('floor'))"
timeout 150 python3 pytorch_decode.py > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
cut -c1-220 $R/pytorch_decode.jsonl; cut -c1-220 $R/pytorch.jsonl
