#!/bin/bash
# Device command 50: the decode attention with four threads scoring each
# position and groups of positions fitted to the context (f8733e2,
# `tinygpt`) against the build before it (0d3c777, `tinygpt-before`): the
# touched test binaries (attention, decoding, subgroups, the picks; debug
# builds of f8733e2), `tinygpt bench --shape` of both builds alternating,
# two rounds; this build's decode profile; `tinygpt gate` with the bundled
# model and with models/nanogpt.safetensors (the subgroups speed gate at
# both shapes); PyTorch's KV-cache + CUDA-graph decoder in the same command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r50; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in attention decode subgroups sample_pick greedy_pick; do
  timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
timeout 120 .carry/tinygpt gate --checkpoint models/shakespeare.safetensors > $R/gate.txt 2>&1; echo "gate rc=$?"
grep -i "subgroups speed\|subgroups sample\|subgroups:" $R/gate.txt | cut -c1-260
timeout 150 .carry/tinygpt gate --checkpoint models/nanogpt.safetensors > $R/gate-nanogpt.txt 2>&1; echo "gate nanogpt rc=$?"
grep -i "subgroups speed\|subgroups sample\|subgroups:\|on the loaded" $R/gate-nanogpt.txt | cut -c1-260; save
cd .carry
timeout 100 ./tinygpt bench --profile --decode-only > $R/profile.json 2> $R/profile.err; echo "profile rc=$?"; save
for round in 1 2; do
  for s in tiny small nanogpt; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r50"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
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
