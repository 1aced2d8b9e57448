#!/bin/bash
# One device command: #13 before/after (interleaved), profile, PyTorch anchors, ceilings.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1
cd .carry
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
./tinygpt-after info > $R/info.txt 2>&1
t0=$(date +%s)
for i in 1 2; do
  ./tinygpt-before bench > $R/before-$i.json 2> $R/before-$i.err
  ./tinygpt-after bench > $R/after-$i.json 2> $R/after-$i.err
done
save
echo "benches: $(( $(date +%s) - t0 ))s"
./tinygpt-after bench --profile > $R/profile-after.json 2> $R/profile.err
save
echo "profile: $(( $(date +%s) - t0 ))s"
python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err
save
python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/decode.jsonl 2> $R/decode.err
save
python3 ceilings.py > $R/ceilings.json 2> $R/ceilings.err
echo "all: $(( $(date +%s) - t0 ))s"
tail -c 600 $R/*.err
save
