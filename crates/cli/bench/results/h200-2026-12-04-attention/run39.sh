#!/bin/bash
# Device command 39: the three attention training kernels with 32 rows a
# workgroup, 4 threads a row and 8 keys (or queries) a thread (`tinygpt`),
# against the commit before them (`tinygpt-before`, c79f39a). The
# attention, whole-model, tensor-core training and gate tests on the H200;
# `tinygpt bench --shape` of both builds alternating (tiny and small twice,
# nanogpt once); the whole `tinygpt bench`, PyTorch's decoders and PyTorch's
# training (fp32, TF32) in the same command; each build's training
# profiles; then the nanoGPT-protocol quality run on the fastest gated path.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r39; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
ok=1
for t in attention gpu_model coop_training gate; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cd .carry
for round in 1 2; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 200 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 150 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
for v in before after; do
  bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
  for s in tiny small nanogpt; do
    timeout 60 $bin bench --profile --shape $s > $R/profile-$s-$v.json 2> $R/profile-$s-$v.err; echo "profile $s $v rc=$?"
  done
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r39"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["train"]:
        rows.setdefault((s, t["path"]), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print("train", *k, "| before", by.get("before"), "| after", by.get("after"))
d = json.load(open(f"{R}/bench.json"))
for s in d["sample"]:
    print("bench", s["config"], s["path"], s["mode"][:6], s["samples"], round(s["sample_tokens_per_s"]))
for t in d["train"]:
    print("bench", t["config"], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for m in d.get("matmul", []):
    print("matmul", m["shape"][:24], m["path"], round(m["ms"], 3), round(m["tflops"], 1))
print(d.get("floor"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    for r in json.load(open(f))["profile"]:
        if not r["what"].startswith("train"): continue
        att = [k for k in r["kernels"] if k["key"].startswith("attention")]
        print(f.split("/")[-1][8:-5], r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['mean_us']:.1f}" for k in att))
PY
if [ $ok = 1 ]; then
  timeout 95 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
    --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
    --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
    > $R/quality.jsonl 2> $R/quality.err
  echo "quality rc=$?"; save
  grep -h "coop-matrix speed\|fast paths" $R/quality.err | cut -c1-200
  python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))
"
fi
echo "all: $(( $(date +%s) - t0 ))s"
