#!/bin/bash
# Device command 26: the tensor-core path as kept — the tiled kernel with
# 64-wide K blocks (`tinygpt`, COOP_KERNEL = Tiled64) or 32-wide ones
# (`tinygpt-k32`: the same tree built with COOP_KERNEL = Tiled), the fc
# layer's GELU in the product's epilogue (run 25 measured the backward's
# GELU′ epilogue slower; it is not used). The coop kernels' tests (golden
# of every kernel in every layout, unsplit and split; the GELU epilogue),
# the path's tests and the gate suite; `tinygpt bench` of both builds;
# `tinygpt gate` (the start-up shape's speed gates); PyTorch's training
# anchors (fp32 and TF32 at every shape, bf16 and torch.compile at
# nanogpt); both nanogpt profiles; then, if every test passed, the
# nanoGPT-protocol run of each build on the gated paths, 100 s each.
# Everything comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r26; mkdir -p $R $OUT
ok=1
for t in matmul_coop coop_training gate; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
grep -h "test result\|DID NOT\|FAILED\|panicked\|worst\|coop gate\|GELU" $R/test-*.txt | cut -c1-250
cd .carry
timeout 100 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"
timeout 100 ./tinygpt-k32 bench > $R/bench-k32.json 2> $R/bench-k32.err; echo "bench-k32 rc=$?"
timeout 60 ./tinygpt gate > $R/gate.txt 2>&1; echo "gate rc=$?"; grep -h "speed\|fast paths" $R/gate.txt | cut -c1-220
timeout 100 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"
timeout 100 python3 pytorch_baseline.py --configs nanogpt --modes bf16,compile --steps 20 >> $R/pytorch.jsonl 2> $R/pytorch-compile.err; echo "pytorch bf16/compile rc=$?"
timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"
timeout 40 ./tinygpt-k32 bench --profile --shape nanogpt > $R/profile-k32.json 2> $R/profile-k32.err; echo "profile-k32 rc=$?"
python3 - <<'PY'
import json
R = "/tmp/r26"
for f in ["bench.json", "bench-k32.json"]:
    try: d = json.load(open(f"{R}/{f}"))
    except Exception as e: print(f, "unreadable", e); continue
    if f == "bench.json":
        for m in d.get("matmul", []):
            print(f, m["shape"][:20], m["path"], m.get("kernel", ""), round(m["ms"], 3), round(m["tflops"], 1))
    for t in d["train"]:
        print(f, t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for f in ["profile-nanogpt.json", "profile-k32.json"]:
    try: p = json.load(open(f"{R}/{f}"))["profile"]
    except Exception as e: print(f, "unreadable", e); continue
    for r in p:
        if r["what"] == "train_step_coop":
            print(f, r["what"], r["dispatches"], round(r["gpu_total_us"]))
            for k in r["kernels"][:9]:
                print("   ", k["key"], k["calls"], round(k["total_us"]))
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
PY
if [ $ok = 1 ]; then
  for b in tinygpt tinygpt-k32; do
    timeout 100 ./$b train --preset nanogpt --corpus tinyshakespeare.txt \
      --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
      --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
      > $R/quality-$b.jsonl 2> $R/quality-$b.err
    echo "quality $b rc=$?"
    grep -h "coop-matrix speed\|fast paths" $R/quality-$b.err | cut -c1-200
    python3 -c "
import json,sys
for l in open('$R/quality-$b.jsonl'):
    j=json.loads(l)
    if 'val_loss' in j: print('$b', j['step'], round(j['val_loss'],4), round(j['elapsed_s'],1), round(j['tokens_per_s']))"
  done
fi
tar -czf $OUT/results.tar.gz -C $R .
