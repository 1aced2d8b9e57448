#!/bin/bash
# Device command 11 (run10 again, the speed gate calibrated to 25 ms rounds): the speed gate on the H200 (`tinygpt gate`, speed gate
# on, twice, then as JSON; with the bundled model's checkpoint too) and the
# bundled model's time to first token natively (`tinygpt sample`, three runs).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
B=.carry/tinygpt
for i in 1 2 3 4; do timeout 120 $B gate > $R/gate-$i.txt 2>&1; echo "gate $i rc=$?"; done
timeout 120 $B gate --json > $R/gate.json 2> $R/gate-json.err; echo "gate json rc=$?"
timeout 120 $B gate --checkpoint models/shakespeare.safetensors > $R/gate-model.txt 2>&1; echo "gate model rc=$?"
timeout 120 $B gate --speed-gate off > $R/gate-off.txt 2>&1; echo "gate off rc=$?"
save
for i in 1 2 3; do timeout 60 $B sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 --temperature 0 > $R/sample-$i.txt 2> $R/sample-$i.err; echo "sample $i rc=$?"; done
save
echo "all: $(( $(date +%s) - t0 ))s"
grep -h "speed" $R/gate-*.txt; grep -h "first token" $R/sample-*.err $R/sample-*.txt
