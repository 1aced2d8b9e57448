#!/bin/bash
# Device command 34: the row sums on the small-output kernel only, the
# 64×64 kernel's code as before them (`tinygpt`), against the commit before
# the row sums (`tinygpt-before`, dc1805d): the split-K and whole-model
# gradient tests on the H200, then `tinygpt bench --shape tiny` and
# `--shape small` of each build, alternating, three rounds, and each
# build's tiny and small training-step profiles. Everything comes back as
# results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r34; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_split_k gpu_model; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cd .carry
for round in 1 2 3; do
  for s in tiny small; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 90 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
for v in before after; do
  bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
  for s in tiny small; do
    timeout 60 $bin bench --profile --shape $s > $R/profile-$s-$v.json 2> $R/profile-$s-$v.err; echo "profile $s $v rc=$?"
  done
done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r34"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); name = f.split("/")[-1][6:-5]
    print(name, " ".join(f"{t['path']} {t['ms_per_step']:.3f}" for t in d["train"]))
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    for r in json.load(open(f))["profile"]:
        if r["what"] != "train_step": continue
        print(f.split("/")[-1][8:-5], r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:6]:
            print("   ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"]))
PY
