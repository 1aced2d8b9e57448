#!/bin/bash
# Device command 20: the transposed operands staged through workgroup
# memory (coop_stage.wgsl stage_a_t / stage_b_t): the coop kernel's tests
# (golden, all layouts) and the path's tests, `tinygpt bench` (training
# rows), PyTorch's training anchors, and the profile of the nanogpt step.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p $OUT
for t in matmul_coop coop_training; do
  timeout 150 .carry/tests/$t --nocapture --test-threads 1 > $OUT/test-$t.txt 2>&1; echo "test $t rc=$?"
done
cd .carry
timeout 200 ./tinygpt bench > $OUT/bench.json 2> $OUT/bench.err; echo "bench rc=$?"
timeout 120 python3 pytorch_baseline.py --modes fp32,tf32 --steps 20 > $OUT/pytorch.jsonl 2> $OUT/pytorch.err; echo "pytorch rc=$?"
timeout 120 ./tinygpt bench --profile --shape nanogpt > $OUT/profile-nanogpt.json 2> $OUT/profile-nanogpt.err; echo "profile rc=$?"
grep -h "test result\|DID NOT\|FAILED\|panicked\|speed:" $OUT/test-*.txt | cut -c1-300
python3 - <<'PY'
import json, os
o = os.environ["OUT"]
d = json.load(open(o + "/bench.json"))
for t in d["train"]:
    print(t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for m in d["matmul"]:
    print(m["shape"], m["path"], round(m["ms"], 3), round(m["tflops"], 1))
for r in json.load(open(o + "/profile-nanogpt.json"))["profile"]:
    if r["what"].startswith("train"):
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:6]:
            print("   ", k["key"], k["calls"], round(k["total_us"]))
for l in open(o + "/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
PY
