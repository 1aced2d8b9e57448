#!/bin/bash
# Device command 98 (written 2026-12-05 for the next session with a device;
# results in run98/): the nanoGPT-protocol quality run (as runs 63 and 68)
# on the fastest gated path with the attention on tensor cores
# (`--coop-attention`): validation ≤ 1.47 is issue #15's line. Carry: .gl,
# .carry (bins97.tar.xz, tinyshakespeare.txt copied from ../shared/data).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins97.tar.xz -C .carry || exit 1
R=/tmp/r98; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
cd .carry
timeout 400 ./tinygpt --coop-attention train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop-attention.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$?"; save
grep -h "coop-matrix\|fast paths\|tensor" $R/quality.err | cut -c1-200 | head
python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))"
