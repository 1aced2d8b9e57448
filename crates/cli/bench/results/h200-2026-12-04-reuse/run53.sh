#!/bin/bash
# Device command 53: the tensor-core weight gradients reading the operands
# their dX and forward products staged, the element-wise kernels at 2,048
# elements a workgroup and the LayerNorms on two-barrier trees (`tinygpt`,
# this build) against the
# commit before (`tinygpt-before`, 6628c29). First the touched test
# binaries on the H200 (coop_reuse: bit identity with a product staging
# its own; coop_training with the training gate; the element-wise and
# LayerNorm kernels are checked by comparing final losses, bit for bit;
# debug builds, stripped), then `tinygpt bench --shape` of both builds
# alternating (two rounds of each shape; each row's final loss, to compare
# bits), PyTorch's training (fp32 and TF32 at every shape, bf16 and
# torch.compile at nanogpt) in the same command, this build's training
# profiles,
# and the nanoGPT-protocol quality run on the fastest gated path.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r53; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
ok=1
for t in coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
grep -h "DID NOT\|FAILED\|panicked\|coop\|training gate" $R/test-*.txt | cut -c1-220 | head -40
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s ok=$ok"; save
cd .carry
for round in 1 2; do
  for s in nanogpt small tiny; do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 100 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes bf16,compile --steps 20 >> $R/pytorch.jsonl 2>> $R/pytorch.err; echo "pytorch bf16/compile rc=$?"; save
for s in tiny small nanogpt; do
  timeout 60 ./tinygpt bench --profile --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r53"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["train"]:
        rows.setdefault((s, t["path"]), {}).setdefault(v, []).append((round(t["ms_per_step"], 3), t["final_loss"]))
for k, by in rows.items():
    print("train", *k, "| before", by.get("before"), "| after", by.get("after"))
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        if not r["what"].startswith("train"): continue
        print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:18]))
PY
if [ $ok = 1 ]; then
  timeout 95 ./tinygpt train --preset nanogpt --corpus tinyshakespeare.txt \
    --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
    --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop.safetensors --json --fast-paths \
    > $R/quality.jsonl 2> $R/quality.err
  echo "quality rc=$?"; save
  grep -h "coop-matrix speed\|fast paths\|tensor" $R/quality.err | cut -c1-200 | head
  python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))
"
fi
echo "all: $(( $(date +%s) - t0 ))s"
