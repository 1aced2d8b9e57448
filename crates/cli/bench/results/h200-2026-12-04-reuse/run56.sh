#!/bin/bash
# Device command 56: the session's last code — run 54's and the dX products
# reading the weights their forward products staged (`B_NK`) — (`tinygpt`)
# against the commit
# before the session (`tinygpt-before`, 6628c29): the tensor-core test
# binaries (coop_reuse, coop_training with its training gate, matmul_coop;
# debug builds, stripped); `tinygpt bench --shape` of both builds
# alternating (two rounds of each shape; final losses to compare bits);
# PyTorch's training (fp32 and TF32 at every shape) in the same command,
# and this build's training profiles.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r56; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in coop_reuse coop_training matmul_coop; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
cd .carry
for round in 1 2; do
  for s in nanogpt small tiny; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 100 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
for s in tiny small nanogpt; do
  timeout 60 ./tinygpt bench --profile --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"
done; save
python3 - <<'PY'
import json, glob
R = "/tmp/r56"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["train"]:
        rows.setdefault((s, t["path"]), {}).setdefault(v, []).append((round(t["ms_per_step"], 3), t["final_loss"]))
for k, by in rows.items():
    print("train", *k, "| before", by.get("before"), "| after", by.get("after"))
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        if not r["what"].startswith("train"): continue
        print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:18]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
