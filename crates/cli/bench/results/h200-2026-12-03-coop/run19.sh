#!/bin/bash
# Device command 19: the tensor-core tests with the dropped-K-tail fault
# variant the gate must fail, and `tinygpt bench --profile` of the small and
# nanogpt training steps on f32 and on tensor cores (where the step's time
# goes on the coop path).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
mkdir -p $OUT
timeout 150 .carry/tests/coop_training --nocapture --test-threads 1 > $OUT/test-coop_training.txt 2>&1; echo "test rc=$?"
for s in small nanogpt; do
  timeout 120 .carry/tinygpt bench --profile --shape $s > $OUT/profile-$s.json 2> $OUT/profile-$s.err; echo "profile $s rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked\|FAIL" $OUT/test-coop_training.txt | cut -c1-400
python3 - <<'PY'
import json, os
for s in ["small", "nanogpt"]:
    d = json.load(open(os.environ["OUT"] + f"/profile-{s}.json"))
    for r in d["profile"]:
        if r["what"].startswith("train"):
            print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]))
            for k in r["kernels"][:8]:
                print("   ", k["key"], k["calls"], round(k["total_us"]), round(k["share"] * 100, 1))
PY
