#!/bin/bash
# Device command 32: run 31 again with the row sums of the second version
# (summed from the op(A) values each invocation stages, in row-summing
# pipelines of their own: `tinygpt`) against the commit before the row sums
# (`tinygpt-before`, dc1805d: separate column sums), alternating per shape,
# twice; the split-K and whole-model gradient tests on the H200; one full
# `tinygpt bench` with PyTorch's decoders and training anchors in the same
# command; each build's tiny training-step profile; the bundled model's time
# to first token. Everything comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r32; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_split_k gpu_model; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry
for n in 1 2 3; do timeout 60 $B/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
cd .carry
for round in 1 2; do
  for s in tiny small; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 90 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
echo "shapes: $(( $(date +%s) - t0 ))s"
timeout 150 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
for v in before after; do
  bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
  timeout 60 $bin bench --profile --shape tiny > $R/profile-tiny-$v.json 2> $R/profile-tiny-$v.err; echo "profile $v rc=$?"
done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r32"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as e: print(f, e); continue
    name = f.split("/")[-1][6:-5]
    for t in d["train"]:
        print(name, "train", t["path"], round(t["ms_per_step"], 3))
    for s in d["sample"]:
        if s.get("samples", 1) == 1 and s.get("mode") == "greedy":
            print(name, "sample", s["path"], round(s["sample_tokens_per_s"]))
d = json.load(open(f"{R}/bench.json"))
for s in d["sample"]:
    print("bench", s["config"], s["path"], s.get("mode"), s.get("samples"), round(s["sample_tokens_per_s"]))
for t in d["train"]:
    print("bench", t["config"], t["path"], round(t["ms_per_step"], 3))
print(d.get("floor"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
for v in ("before", "after"):
    for r in json.load(open(f"{R}/profile-tiny-{v}.json"))["profile"]:
        print(v, r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:8]:
            print("   ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"]))
PY
grep -h "first token" $R/sample-*.txt $R/sample.err | head -6
