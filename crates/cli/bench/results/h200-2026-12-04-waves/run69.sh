#!/bin/bash
# Device command 69: the nanoGPT-protocol quality run's spread over seeds.
# Run 68 put b329d60's best validation at 1.4707 (step 1,500; seed 1337),
# run 63 2eea2a5's at 1.4619: the two differ only in the order of the f32
# sums of the weight gradients' K slices. Here both builds with seeds 1
# and 2, each as run 68's (`--fast-paths`, the tensor-core path gated and
# active), cut off after the evaluation at step 1,750.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r69; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
for seed in 1 2; do
  for v in before after; do
    bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
    timeout 64 $bin train --preset nanogpt --corpus tinyshakespeare.txt \
      --steps 5000 --batch-size 64 --lr 1e-3 --min-lr 1e-4 --warmup-steps 100 --dropout 0.2 \
      --eval-interval 250 --eval-batches 40 --out /tmp/q.safetensors --json --fast-paths --seed $seed \
      > $R/quality-$v-seed$seed.jsonl 2> $R/quality-$v-seed$seed.err
    echo "$v seed $seed rc=$? $(( $(date +%s) - t0 ))s"; save
    grep -h "tensor-core training active\|fast paths" $R/quality-$v-seed$seed.err | cut -c1-120
  done
done
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("/tmp/r69/quality-*.jsonl")):
    v = [(j["step"], round(j["val_loss"], 4)) for j in map(json.loads, open(f)) if j.get("val_loss") is not None]
    print(f.split("/")[-1], v)
PY
echo "all: $(( $(date +%s) - t0 ))s"
