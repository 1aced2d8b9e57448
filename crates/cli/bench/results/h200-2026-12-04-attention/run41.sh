#!/bin/bash
# Device command 41: the three attention training kernels with two query
# (or key) rows a thread and four keys (or queries), 32 rows a workgroup
# (`tinygpt`, this build), against the commit before the attention work
# (`tinygpt-before`, c79f39a). First every test binary of tinygpt-gpu on
# the H200 (the whole native GPU suite; the tensor-core tests run here,
# where lavapipe says DID NOT RUN); then `tinygpt bench --shape` of both
# builds alternating (three rounds of tiny and small, two of nanogpt); the
# whole `tinygpt bench`, PyTorch's decoders and PyTorch's training (fp32
# and TF32 at every shape, bf16 and torch.compile at nanogpt) in the same
# command; this build's training profiles; the nanoGPT-protocol quality
# run on the fastest gated path.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
# tests/shaders.rs scans the source tree at its build path.
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r41; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
ok=1
for t in $(ls .carry/tests); do
  timeout 100 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
echo "suite: $(( $(date +%s) - t0 ))s ok=$ok"
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | sort | uniq -c | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'; save
cd .carry
for round in 1 2 3; do
  for s in tiny small $([ $round != 3 ] && echo nanogpt); do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 200 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 100 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes bf16,compile --steps 20 >> $R/pytorch.jsonl 2>> $R/pytorch.err; echo "pytorch bf16/compile rc=$?"; save
for s in tiny small nanogpt; do
  timeout 60 ./tinygpt bench --profile --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r41"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["train"]:
        rows.setdefault((s, t["path"]), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print("train", *k, "| before", by.get("before"), "| after", by.get("after"))
d = json.load(open(f"{R}/bench.json"))
for a in d.get("attention", []):
    print("attention", a["shape"], a["kernel"], a["workgroups"], round(a["us"], 1))
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
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        if not r["what"].startswith("train"): continue
        print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:8]))
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
