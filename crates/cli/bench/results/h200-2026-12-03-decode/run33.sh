#!/bin/bash
# Device command 33: the session's final build (bias row sums on the
# small-output splits only; sampling rows the median of seven timed runs):
# the split-K, whole-model gradient and decode tests on the H200; `small`
# before (`tinygpt-before`, dc1805d) and after, alternating, twice; one full
# `tinygpt bench` with PyTorch's decoders and training anchors in the same
# command; the decode-token profiles of the three shapes and tiny's
# training-step profile; the bundled model's time to first token.
# Everything comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r33; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_split_k gpu_model decode; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry
for n in 1 2 3; do timeout 60 $B/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
cd .carry
for round in 1 2; do
  for v in before after; do
    bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
    timeout 90 $bin bench --shape small > $R/shape-small-$v-$round.json 2> $R/shape-small-$v-$round.err; echo "shape small $v $round rc=$?"
  done
done; save
timeout 200 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
for s in tiny small nanogpt; do timeout 60 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"; done
timeout 60 ./tinygpt bench --profile --shape tiny > $R/profile-tiny-train.json 2> $R/profile-tiny-train.err; echo "profile tiny train rc=$?"; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r33"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); name = f.split("/")[-1][6:-5]
    for t in d["train"]:
        print(name, "train", t["path"], round(t["ms_per_step"], 3))
d = json.load(open(f"{R}/bench.json"))
for s in d["sample"]:
    runs = s.get("sample_tokens_per_s_runs", [])
    print("bench", s["config"], s["path"], s.get("mode"), s.get("samples"), round(s["sample_tokens_per_s"]), [round(x) for x in runs])
for t in d["train"]:
    print("bench", t["config"], t["path"], round(t["ms_per_step"], 3))
print(d.get("floor"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
for s in ("tiny", "small", "nanogpt", "tiny-train"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:6]:
            print("   ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"]))
PY
grep -h "first token" $R/sample-*.txt $R/sample.err | head -6
