#!/bin/bash
# Device command 70: this build (`tinygpt`: nanoGPT's 384-wide tensor-core
# products of K ≥ 1024 — its QKV's and MLP's dX, the MLP's second product
# — in two K slices through the split-K scratch, memory::coop_split_k)
# against b329d60 (`tinygpt-before`): the tensor-core tests (with the new
# split-in-two test); `bench --shape nanogpt` alternating, two rounds,
# `small` one; this build's nanoGPT profile; its nanoGPT-protocol quality
# run (seed 1337, as run 68's, cut off after step 1,750).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r70; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked\|split in two" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
cd .carry
for round in 1 2; do
  for s in nanogpt small; do
    [ $s = small ] && [ $round = 2 ] && continue
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "$s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
timeout 62 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/q.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$?"; save
grep -h "tensor-core training active\|fast paths" $R/quality.err | cut -c1-120
python3 - <<'PY'
import json, glob
R = "/tmp/r70"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    for t in json.load(open(f))["train"]:
        if t["path"] == "coop-matrix": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"] == "train_step_coop":
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:14]))
print([(j["step"], round(j["val_loss"], 4), round(j["tokens_per_s"])) for j in map(json.loads, open(f"{R}/quality.jsonl")) if j.get("val_loss") is not None])
PY
echo "all: $(( $(date +%s) - t0 ))s"
