#!/bin/bash
# Device command 36: sampling with up to four chunks of at most eight tokens
# queued (was two of 32), after the chained decoder of run 35. The decode
# and pick tests on the H200; `tinygpt bench --shape` of three builds,
# alternating — `tinygpt-before` (3db3e2e, the session's start),
# `tinygpt-chain` (run 35's build) and `tinygpt` (this one) — twice for
# tiny and small, once for nanogpt; PyTorch's decoders in the same command;
# tiny's decode profile; the bundled model's first token.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r36; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode sample_pick; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry
for n in 1 2 3; do timeout 60 $B/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
cd .carry
for round in 1 2; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for v in before chain after; do
      bin=./tinygpt; [ $v != after ] && bin=./tinygpt-$v
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 60 ./tinygpt bench --profile --decode-only --shape tiny > $R/profile-tiny.json 2> $R/profile-tiny.err; echo "profile tiny rc=$?"; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob, statistics as st
R = "/tmp/r36"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        key = (s, x["path"], x["mode"][:6], x["samples"])
        rows.setdefault(key, {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
    for t in d["train"]:
        rows.setdefault((s, "train", t["path"], 0), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print(*k, "| before", by.get("before"), "| chain", by.get("chain"), "| after", by.get("after"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for r in json.load(open(f"{R}/profile-tiny.json"))["profile"]:
    if r["what"] == "decode_chain":
        print("tiny chain", round(r["gpu_us_per_token"], 1), "us/token gpu;", round(r["wall_us"] / r["chained_tokens"], 1), "wall")
PY
grep -h "first token" $R/sample-*.txt $R/sample.err | head -3
