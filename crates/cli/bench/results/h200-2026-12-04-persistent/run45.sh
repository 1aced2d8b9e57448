#!/bin/bash
# Device command 45: run 44 again with the LayerNorm GEMVs running two groups of
# 8 columns a workgroup past 512 workgroups (several samples together) on top;
# `tinygpt`, this build) against the session's first build (`tinygpt-before`,
# fb13d49): `tinygpt bench --shape` of both builds alternating, two rounds;
# then this build's decode profiles (one sample and eight: which kernels
# grow with the batch) and PyTorch's decoders in the same command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r45; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
for round in 1 2; do
  for s in tiny small nanogpt; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 100 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 100 ./tinygpt bench --profile --decode-only > $R/profile.json 2> $R/profile.err; echo "profile rc=$?"; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r45"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
    for t in d["train"]:
        rows.setdefault((s, t["path"], "train", 0), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print(*k, "| before", by.get("before"), "| after", by.get("after"))
for r in json.load(open(f"{R}/profile.json"))["profile"]:
    if r["what"].startswith("decode_chain"):
        print(r["config"], r["what"], r["samples"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    else:
        print(r["config"], r["what"], r["dispatches"], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"]))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
PY
echo "all: $(( $(date +%s) - t0 ))s"
