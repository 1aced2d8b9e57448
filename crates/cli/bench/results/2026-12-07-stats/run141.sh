#!/bin/bash
# Device command 141 (2026-12-07; results in run141/). The nanoGPT
# protocol's quality run on the submitted build's tensor-core path (F/
# from .carry/bins139.tar.xz, `e7361a7`: the attention's forward and
# backward on tensor cores since run 138), as run 100 ran it (dropout
# 0.2, the default seed), cut at 170 s. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins139.tar.xz -C .carry || exit 1
R=/tmp/r141; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
timeout 170 F/tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$? $(( $(date +%s) - t0 ))s"; save
grep -h "coop-matrix speed\|coop-matrix training gate:\|coop-matrix gate attention\|error\|Error" $R/quality.err | cut -c1-200
python3 - $R/quality.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try: d = json.loads(line)
    except Exception: continue
    if any(k in d for k in ("val_loss", "val")):
        print({k: d[k] for k in d if k in ("step", "val_loss", "val", "train_loss", "tokens_per_s", "elapsed_s")})
PY
tail -3 $R/quality.jsonl | cut -c1-300
echo "all: $(( $(date +%s) - t0 ))s"
