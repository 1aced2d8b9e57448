#!/bin/bash
# Device command 67: this build (`tinygpt`: the tensor-core weight
# gradients split to fill one wave within a scratch sized for them; the
# 128×64 tiled kernel, `narrow`, for unsplit outputs whose 128×128 grid
# leaves at least half its last wave empty, TINYGPT_EXP_NARROW=0 turning
# that off) against 2eea2a5 (`tinygpt-before`): the tensor-core tests;
# `bench --shape matmuls` (direct, tiled and narrow on every row);
# `bench --shape nanogpt` (before, narrow off, on; two rounds) and `small`;
# the nanoGPT profile; PyTorch's small and nanoGPT training in the same
# command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r67; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
cd .carry
timeout 100 ./tinygpt bench --shape matmuls > $R/matmuls.json 2> $R/matmuls.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"; save
for round in 1 2; do
  for s in nanogpt small; do
    [ $s = small ] && [ $round = 2 ] && continue
    for v in before off on; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      n=1; [ $v = off ] && n=0
      TINYGPT_EXP_NARROW=$n timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "$s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
timeout 200 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,bf16,compile --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r67"
for m in json.load(open(f"{R}/matmuls.json"))["matmul"]:
    if "coop" in m["path"]: print(m["shape"][:30], m.get("kernel", ""), m.get("engine", ""), round(m["tflops"], 1), round(m["ms"], 3))
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    for t in json.load(open(f))["train"]:
        if t["path"] == "coop-matrix": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"] == "train_step_coop":
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:14]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
