#!/bin/bash
# Device command 63: the nanoGPT-protocol quality run (BENCHMARKS.md,
# "Quality") on the fastest gated path of the committed build (d3048bb:
# the tiled tensor-core kernel on four-half tiles), 95 s of training.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r63; mkdir -p $R $OUT
cd .carry
timeout 95 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$?"
tar czf $OUT/results.tar.gz -C $R .
grep -h "coop-matrix speed\|fast paths\|tensor" $R/quality.err | cut -c1-200 | head
python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))
"
