#!/bin/bash
# Device command 68: b329d60 (`tinygpt`: the tensor-core weight gradients'
# K split by memory::coop_split_k in a scratch sized for it) against
# 2eea2a5 (`tinygpt-before`): the tensor-core tests; `bench --shape`
# nanogpt and small alternating, two rounds; this build's nanoGPT profile;
# PyTorch's small and nanoGPT training (fp32, TF32, bf16, torch.compile);
# then the nanoGPT-protocol quality run on this build's fastest gated path
# (as run 63).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r68; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
cd .carry
for round in 1 2; do
  for s in nanogpt small; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "$s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
timeout 200 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,bf16,compile --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 95 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$?"; save
grep -h "coop-matrix speed\|fast paths\|tensor" $R/quality.err | cut -c1-200 | head
python3 - <<'PY'
import json, glob
R = "/tmp/r68"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f))
    for t in d["train"]:
        if t["path"] != "f16-compute": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"] == "train_step_coop":
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:12]))
for l in open(f"{R}/quality.jsonl"):
    j = json.loads(l)
    if j.get("val_loss") is not None: print(j["step"], round(j["val_loss"], 4), round(j["elapsed_s"], 1), round(j["tokens_per_s"]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
