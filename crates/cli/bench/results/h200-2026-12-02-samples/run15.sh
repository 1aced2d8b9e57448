#!/bin/bash
# Device command 15: the bias gradients inside the split-K weight gradients,
# before (`tinygpt-before`: commit 4f264a7) and after (c957ff1: the ones
# column, and a tile column holding it alone summing dy directly),
# alternating in one command — `tinygpt bench` twice each, the per-dispatch
# profile of tiny and small for each, and PyTorch's fp32 training anchor.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
cd .carry
for i in 1 2; do for b in before after; do
  bin=./tinygpt; [ $b = before ] && bin=./tinygpt-before
  timeout 200 $bin bench > $R/bench-$b-$i.json 2> $R/bench-$b-$i.err; echo "bench $b $i rc=$?"
done; done; save
for b in before after; do
  bin=./tinygpt; [ $b = before ] && bin=./tinygpt-before
  for s in tiny small; do timeout 120 $bin bench --profile --shape $s > $R/profile-$b-$s.json 2> $R/profile-$b-$s.err; echo "profile $b $s rc=$?"; done
done; save
for f in $R/bench-*.json; do python3 -c "import json,sys; d=json.load(open('$f')); print('$(basename $f)', [(t['config'], round(t['ms_per_step'],3)) for t in d['train']])"; done
for f in $R/profile-*.json; do python3 -c "import json; d=json.load(open('$f')); [print('$(basename $f)', r['config'], r['what'], r['dispatches'], round(r['gpu_total_us'])) for r in d['profile'] if r['what']=='train_step']"; done
timeout 120 python3 pytorch_baseline.py --configs tiny,small --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
cut -c1-200 $R/pytorch.jsonl
