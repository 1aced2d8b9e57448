#!/bin/bash
# Device command 22: the weight gradients split along K on tensor cores
# (bind_matmul_coop_split_k; after run 21's staging): the coop kernel's
# tests (golden in every layout, unsplit and split) and the path's tests,
# `tinygpt bench`, PyTorch's training anchors, the nanogpt profile, then —
# only if every test passed — the nanoGPT-protocol run on the gated paths,
# stopped after 150 s (past step 1,500).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p $OUT
ok=1
for t in matmul_coop coop_training; do
  timeout 150 .carry/tests/$t --nocapture --test-threads 1 > $OUT/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
cd .carry
timeout 200 ./tinygpt bench > $OUT/bench.json 2> $OUT/bench.err; echo "bench rc=$?"
timeout 120 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $OUT/pytorch.jsonl 2> $OUT/pytorch.err; echo "pytorch rc=$?"
timeout 120 ./tinygpt bench --profile --shape nanogpt > $OUT/profile-nanogpt.json 2> $OUT/profile-nanogpt.err; echo "profile rc=$?"
grep -h "test result\|DID NOT\|FAILED\|panicked\|worst" $OUT/test-*.txt | cut -c1-300
python3 - <<'PY'
import json, os
o = os.environ["OUT"]
d = json.load(open(o + "/bench.json"))
for t in d["train"]:
    print(t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for r in json.load(open(o + "/profile-nanogpt.json"))["profile"]:
    if r["what"].startswith("train"):
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:8]:
            print("   ", k["key"], k["calls"], round(k["total_us"]))
for l in open(o + "/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
PY
if [ $ok = 1 ]; then
  timeout 150 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
    --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
    --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
    > $OUT/quality.jsonl 2> $OUT/quality.err
  echo "quality rc=$?"
  grep -h "coop-matrix speed\|coop-matrix gate:\|fast paths" $OUT/quality.err | cut -c1-250
  cut -c1-150 $OUT/quality.jsonl
fi
