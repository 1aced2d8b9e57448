#!/bin/bash
# Device command 37: the picks write the next step's input row, so a
# chained step skips the embedding (22 dispatches a token at tiny and
# small, 32 at nanogpt). The decode and pick tests on the H200;
# `tinygpt bench --shape` of three builds, alternating — `tinygpt-before`
# (3db3e2e, the session's start), `tinygpt-sched` (run 36's build) and
# `tinygpt` (this one) — twice for tiny and small, once for nanogpt; then
# the whole `tinygpt bench`, PyTorch's decoders and PyTorch's fp32 training
# in the same command; the decode profiles (chains, host recording); the
# bundled model's first token.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r37; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode sample_pick greedy_pick; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry
for n in 1 2 3; do timeout 60 $B/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
cd .carry
for round in 1 2; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for v in before sched after; do
      bin=./tinygpt; [ $v != after ] && bin=./tinygpt-$v
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 200 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
for s in tiny small nanogpt; do timeout 60 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"; done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r37"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items():
    print(*k, "| before", by.get("before"), "| sched", by.get("sched"), "| after", by.get("after"))
d = json.load(open(f"{R}/bench.json"))
for s in d["sample"]:
    print("bench", s["config"], s["path"], s["mode"][:6], s["samples"], round(s["sample_tokens_per_s"]), [round(x) for x in s["sample_tokens_per_s_runs"]])
for t in d["train"]:
    print("bench", t["config"], t["path"], round(t["ms_per_step"], 3))
print(d.get("floor"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        if r["what"] == "decode_chain":
            print(s, "chain", r["chained_tokens"], "tokens:", round(r["gpu_us_per_token"], 1), "us/token gpu,", round(r["wall_us"] / r["chained_tokens"], 1), "wall,", round(r["record_us_per_token"], 1), "host recording;", r["dispatches_per_token"], "dispatches")
        else:
            print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]))
PY
grep -h "first token" $R/sample-*.txt $R/sample.err | head -3
