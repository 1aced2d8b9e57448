#!/bin/bash
# Device command 25: run 23's kernels and staging (run 24's column-major
# loads of transposed operands measured slower and were dropped) with the
# MLP's GELU in the tensor-core epilogue as a pipeline constant (forward:
# the fc output and its GELU; backward: the product times GELU′), so a
# plain product's kernel has no GELU code. The coop kernels' tests (golden
# of both kernels in every layout, unsplit and split; the epilogue), the
# path's tests and the gate suite; `tinygpt bench`; `tinygpt gate` (the
# start-up shape's speed gates); PyTorch's training anchors (fp32 and TF32
# at every shape, bf16 and torch.compile at nanogpt); the nanogpt profile;
# then, if every test passed, the nanoGPT-protocol run on the gated paths,
# stopped after 150 s. Everything comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r25; mkdir -p $R $OUT
ok=1
for t in matmul_coop coop_training gate; do
  timeout 200 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
grep -h "test result\|DID NOT\|FAILED\|panicked\|worst\|coop gate" $R/test-*.txt | cut -c1-250
cd .carry
timeout 200 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"
timeout 90 ./tinygpt gate > $R/gate.txt 2>&1; echo "gate rc=$?"; grep -h "speed\|fast paths" $R/gate.txt | cut -c1-220
timeout 120 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes bf16,compile --steps 20 >> $R/pytorch.jsonl 2> $R/pytorch-compile.err; echo "pytorch bf16/compile rc=$?"
timeout 90 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"
python3 - <<'PY'
import json, os
R = "/tmp/r25"
for f in ["bench.json"]:
    try: d = json.load(open(f"{R}/{f}"))
    except Exception as e: print(f, "unreadable", e); continue
    for m in d.get("matmul", []):
        print(f, m["shape"][:20], m["path"], m.get("kernel", ""), round(m["ms"], 3), round(m["tflops"], 1))
    for t in d["train"]:
        print(f, t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for f in ["profile-nanogpt.json"]:
    try: p = json.load(open(f"{R}/{f}"))["profile"]
    except Exception as e: print(f, "unreadable", e); continue
    for r in p:
        if r["what"].startswith("train"):
            print(f, r["what"], r["dispatches"], round(r["gpu_total_us"]))
            for k in r["kernels"][:14]:
                print("   ", k["key"], k["calls"], round(k["total_us"]))
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
PY
if [ $ok = 1 ]; then
  timeout 150 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
    --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
    --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
    > $R/quality.jsonl 2> $R/quality.err
  echo "quality rc=$?"
  grep -h "coop-matrix speed\|coop-matrix gate:\|fast paths" $R/quality.err | cut -c1-250
  cut -c1-150 $R/quality.jsonl
fi
tar -czf $OUT/results.tar.gz -C $R .
