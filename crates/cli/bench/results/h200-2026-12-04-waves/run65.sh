#!/bin/bash
# Device command 65: the tensor-core weight gradients' K split sized to
# fill at most 256 workgroups (TINYGPT_EXP_SPLIT=floor, one wave of two
# 128×128 workgroups an SM on the H200's 132) against today's rule (at
# least 256: up to 288, a second wave of 6–24), one binary, alternating:
# `bench --shape nanogpt` two rounds, `small` one; `bench --shape
# matmuls` once (with the new 16384 × 384 → 384 row); the nanoGPT profile
# under the new rule.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r65; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
timeout 100 ./tinygpt bench --shape matmuls > $R/matmuls.json 2> $R/matmuls.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"; save
for round in 1 2; do
  for s in nanogpt small; do
    [ $s = small ] && [ $round = 2 ] && continue
    for v in ceil floor; do
      TINYGPT_EXP_SPLIT=$v timeout 120 ./tinygpt bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "$s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
TINYGPT_EXP_SPLIT=floor timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r65"
for m in json.load(open(f"{R}/matmuls.json"))["matmul"]:
    print(m["shape"][:30], m["path"], m.get("kernel", ""), round(m["tflops"], 1), round(m["ms"], 3))
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    for t in json.load(open(f))["train"]:
        if t["path"] != "f16-compute": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"].startswith("train"):
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:10]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
