#!/bin/bash
# Device command 42: run 41's build (`tinygpt`, the same binary) and the
# gate_model tests with `a_failed_gate_leaves_the_model_on_f32` expecting
# the tensor-core gate to fail only the fault its kernels carry (run 41
# found the test assuming every path carries all three); then the
# nanoGPT-protocol quality run on the fastest gated path (run 41 skipped
# it after that failure) and the bundled model's time to first token.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r42; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
timeout 100 .carry/tests/gate_model --test-threads 1 > $R/test-gate_model.txt 2>&1; echo "test gate_model rc=$?"
grep -h "test \|DID NOT\|panicked" $R/test-gate_model.txt | cut -c1-200; save
for n in 1 2 3; do timeout 60 .carry/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
grep -h "first token" $R/sample-*.txt $R/sample.err | head -3; save
cd .carry
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
echo "all: $(( $(date +%s) - t0 ))s"
