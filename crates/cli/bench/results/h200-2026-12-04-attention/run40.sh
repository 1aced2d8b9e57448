#!/bin/bash
# Device command 40 (a development measurement, no PyTorch): the key
# backward with two key rows a thread and 32 a workgroup, or one and 16
# below 1,024 workgroups (`tinygpt`), against the commit before the
# attention work (`tinygpt-before`, c79f39a). The attention tests; `tinygpt
# bench --shape` of both builds alternating (tiny and small twice, nanogpt
# once), whose `attention` rows time every kernel in both tile variants;
# this build's training profiles.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r40; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
timeout 120 .carry/tests/attention --test-threads 1 > $R/test-attention.txt 2>&1; echo "test attention rc=$?"
grep -h "test result\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cd .carry
for round in 1 2; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
for s in tiny small nanogpt; do
  timeout 60 ./tinygpt bench --profile --shape $s > $R/profile-$s-after.json 2> $R/profile-$s-after.err; echo "profile $s rc=$?"
done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r40"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["train"]:
        rows.setdefault((s, t["path"]), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
    for a in d.get("attention", []):
        print("attention", rnd, a["shape"], a["kernel"], a["tiles"], a["workgroups"], round(a["us"], 1))
for k, by in rows.items():
    print("train", *k, "| before", by.get("before"), "| after", by.get("after"))
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    for r in json.load(open(f))["profile"]:
        if not r["what"].startswith("train"): continue
        att = [k for k in r["kernels"] if k["key"].startswith("attention")]
        print(f.split("/")[-1][8:-5], r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['mean_us']:.1f}" for k in att))
PY
