#!/bin/bash
# Device command 13: several samples at once — `tinygpt bench` (greedy,
# top-k/top-p, and top-k/top-p with 8 samples decoded together; f32 and f16
# storage) with the PyTorch batch-1 decoder and training anchors in the same
# command, then `tinygpt sample` of the bundled model with 1 and 8 samples.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
B=$PWD/.carry/tinygpt
for n in 1 8 1 8; do timeout 60 $B sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 --num-samples $n --temperature 0.8 --top-k 40 > $R/sample-$n.txt 2>> $R/sample-$n.err; echo "sample $n rc=$?"; done
cd .carry
timeout 300 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(s['config'], s['path'], s.get('mode'), s.get('samples'), round(s['sample_tokens_per_s'])) for s in d['sample']]; [print(t['config'], round(t['ms_per_step'],3)) for t in d['train']]; print(d.get('floor'))"
timeout 150 python3 pytorch_decode.py > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
cut -c1-220 $R/pytorch_decode.jsonl; cut -c1-220 $R/pytorch.jsonl; cat $R/sample-*.err
