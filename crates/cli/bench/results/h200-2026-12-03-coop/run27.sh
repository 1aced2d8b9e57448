#!/bin/bash
# Device command 27: the tensor-core path as kept — run 23's tiled kernel
# (32-wide K blocks through workgroup memory, 128×128 tiles) with the fc
# layer's GELU in the product's epilogue (a pipeline constant; run 25's
# GELU′ epilogue of the backward and run 26's K block as a pipeline
# constant measured slower and were dropped). The coop kernels' tests, the
# path's tests and the gate suite; `tinygpt bench`; `tinygpt gate` (the
# start-up shape's speed gates); PyTorch's training anchors (fp32 and
# TF32); the nanogpt profile; then, if every test passed, the
# nanoGPT-protocol run on the gated paths, 130 s. Everything comes back as
# results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r27; mkdir -p $R $OUT
ok=1
for t in matmul_coop coop_training gate; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
grep -h "test result\|DID NOT\|FAILED\|panicked\|worst\|GELU epilogue" $R/test-*.txt | cut -c1-200
cd .carry
timeout 100 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"
timeout 60 ./tinygpt gate > $R/gate.txt 2>&1; echo "gate rc=$?"; grep -h "speed" $R/gate.txt | cut -c1-220
timeout 100 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"
timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"
python3 - <<'PY'
import json
R = "/tmp/r27"
d = json.load(open(f"{R}/bench.json"))
for m in d.get("matmul", []):
    print(m["shape"][:20], m["path"], m.get("kernel", ""), round(m["ms"], 3), round(m["tflops"], 1))
for t in d["train"]:
    print(t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"] == "train_step_coop":
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:10]:
            print("   ", k["key"], k["calls"], round(k["total_us"]))
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
PY
if [ $ok = 1 ]; then
  timeout 130 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
    --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
    --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
    > $R/quality.jsonl 2> $R/quality.err
  echo "quality rc=$?"
  grep -h "coop-matrix speed\|fast paths" $R/quality.err | cut -c1-200
  python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j=json.loads(l)
    if 'val_loss' in j: print(j['step'], round(j['val_loss'],4), round(j['elapsed_s'],1), round(j['tokens_per_s']))"
fi
tar -czf $OUT/results.tar.gz -C $R .
