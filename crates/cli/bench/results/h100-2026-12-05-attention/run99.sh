#!/bin/bash
# Device command 99 (2026-12-05; results in run99/). The build carried in
# .carry/bins99.tar.xz (`0bd6fc5`): the tensor-core attention after run 97
# (its copies fetched a block ahead into registers, a fixed count per
# invocation; the forward's row max and sum across a subgroup's lanes, one
# barrier a block fewer) — its tests on the card, the gate with it, `bench
# --shape` nanoGPT and small without and with `--coop-attention`, on the
# `tiled` and `tiled-ahead3` forms, two rounds; PyTorch's training in the
# same command; then the nanoGPT-protocol quality run with the attention on
# tensor cores. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins99.tar.xz -C .carry || exit 1
R=/tmp/r99; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 .carry/tests/attention_coop --test-threads 1 --nocapture > $R/test-attention_coop.txt 2>&1; echo "test attention_coop rc=$? $(( $(date +%s) - t0 ))s"
grep -h "DID NOT\|FAILED\|panicked\|test result" $R/test-attention_coop.txt | cut -c1-200
cd .carry
timeout 100 ./tinygpt --coop-attention gate > $R/gate.txt 2>&1; echo "gate rc=$? $(( $(date +%s) - t0 ))s"
grep -h "coop-matrix speed\|training gate step 200\|coop-matrix training gate:" $R/gate.txt | cut -c1-200
save
for rnd in 1 2; do
  for s in nanogpt small; do
    for k in tiled tiled-ahead3; do
      for a in off on; do
        flag=""; [ $a = on ] && flag="--coop-attention"
        timeout 60 ./tinygpt $flag bench --shape $s --coop-kernel $k > $R/shape-$s-$k-$a-$rnd.json 2> $R/shape-$s-$k-$a-$rnd.err; echo "$s $k attention-$a $rnd rc=$? $(( $(date +%s) - t0 ))s"
      done
    done
  done; save
  [ $rnd = 1 ] && { timeout 120 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save; }
done
timeout 30 ./tinygpt --coop-attention bench --profile --shape nanogpt > $R/profile-nanogpt-on.json 2> $R/profile-nanogpt-on.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary97.py $R | grep -v "f16-compute\| f32 " | grep "coop-matrix\|coop \|pytorch\|profile"
timeout 150 ./tinygpt --coop-attention train --preset nanogpt --corpus tinyshakespeare.txt \
  --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
  --eval-interval 250 --eval-batches 40 --out /tmp/nanogpt-coop-attention.safetensors --json --fast-paths \
  > $R/quality.jsonl 2> $R/quality.err
echo "quality rc=$? $(( $(date +%s) - t0 ))s"; save
python3 -c "
import json
for l in open('$R/quality.jsonl'):
    j = json.loads(l)
    if j.get('val_loss') is not None: print(j['step'], round(j['val_loss'], 4), round(j['elapsed_s'], 1), round(j['tokens_per_s']))"
echo "all: $(( $(date +%s) - t0 ))s"
