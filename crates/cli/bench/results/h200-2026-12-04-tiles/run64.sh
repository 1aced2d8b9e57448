#!/bin/bash
# Device command 64: the tiled tensor-core kernel with two buffers of tiles
# (a block copied into one while the other is read: one barrier a block
# instead of two) — `tinygpt` — against d3048bb (`tinygpt-before`): the
# tensor-core tests, `bench --shape matmuls` alternating (two rounds),
# `bench --shape nanogpt` (two rounds) and `small` alternating (final
# losses to compare bits), this build's nanoGPT profile.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r64; mkdir -p $R $OUT
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
  for v in before after; do
    bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
    timeout 100 $bin bench --shape matmuls > $R/matmuls-$v-$round.json 2> $R/matmuls-$v-$round.err; echo "matmuls $v $round rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
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
touch $R/pytorch.jsonl
python3 - <<'PY'
import json, glob
R = "/tmp/r64"
for f in sorted(glob.glob(f"{R}/matmuls-*.json")):
    d = json.load(open(f))
    for m in d["matmul"]:
        if "coop" in m["path"] or m["path"] == "f32":
            print(f.split("/")[-1][8:-5], m["shape"][:28], m["path"], m.get("kernel", ""), round(m["tflops"], 1), round(m["ms"], 3))
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    for t in json.load(open(f))["train"]:
        if t["path"] != "f16-compute": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"].startswith("train"):
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:10]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
