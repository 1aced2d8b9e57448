#!/bin/bash
# Device command 12: the speed gate with its training check on the H200 —
# `tinygpt gate` three times at the bundled shape, then with the gallery's
# nanoGPT-shaped checkpoint (timed again at C=384 × 6 layers, then the
# model gate on its weights), and as JSON.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
B=.carry/tinygpt
for i in 1 2 3; do timeout 120 $B gate > $R/gate-$i.txt 2>&1; echo "gate $i rc=$?"; done
save
for i in 1 2; do timeout 200 $B gate --checkpoint models/nanogpt.safetensors > $R/gate-nanogpt-$i.txt 2>&1; echo "gate nanogpt $i rc=$?"; done
timeout 120 $B gate --json > $R/gate.json 2> $R/gate-json.err; echo "gate json rc=$?"
save
echo "all: $(( $(date +%s) - t0 ))s"
grep -h "speed\|: ACTIVE\|: off\|sample gate" $R/gate-*.txt | cut -c1-260
