#!/bin/bash
# Device command 5: both tensor-core kernels' tests, the gate tests with the
# integer to_f16, `gate --fault f16acc`, the bench, PyTorch anchors and
# ceilings, in one command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
cd .carry
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
TINYGPT_REQUIRE_GPU=1 ./test-matmul-coop --nocapture --test-threads=1 > $R/test-matmul-coop.txt 2>&1; echo "coop tests rc=$?" >> $R/test-matmul-coop.txt
TINYGPT_REQUIRE_GPU=1 ./test-gate --nocapture --test-threads=1 > $R/test-gate.txt 2>&1; echo "gate tests rc=$?" >> $R/test-gate.txt
./tinygpt gate --fault f16acc > $R/gate-f16acc.txt 2>&1
save
grep -h "rc=\|golden\|coop gate" $R/test-matmul-coop.txt; grep -h "rc=\|test result" $R/test-gate.txt; head -1 $R/gate-f16acc.txt | cut -c1-250
timeout 240 ./tinygpt bench > $R/bench.json 2> $R/bench.err; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(m['shape'], m['path'], round(m['tflops'],1), round(m['ms'],3)) for m in d['matmul']]; [print(t['config'], round(t['ms_per_step'],2)) for t in d['train']]"
timeout 120 python3 ceilings.py > $R/ceilings.json 2> $R/ceilings.err; save
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,bf16 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; save
echo "all: $(( $(date +%s) - t0 ))s"
cat $R/ceilings.json; cut -c1-200 $R/pytorch.jsonl
