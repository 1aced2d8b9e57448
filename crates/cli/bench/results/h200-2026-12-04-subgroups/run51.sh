#!/bin/bash
# Device command 51: the session's last code commit (a6209ed) on the H200:
# the touched test binaries (subgroups, the fused GEMVs, decoding, and
# gate_model's fault test, which reads every path's `carries`; debug
# builds, stripped), then `tinygpt gate` with the bundled model and with
# models/nanogpt.safetensors (every path's gates and speed gates, the
# tensor cores' through the speed-check helper this commit shares).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r51; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in subgroups gemv_fused decode; do
  timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
timeout 200 .carry/tests/gate_model --test-threads 1 > $R/test-gate_model.txt 2>&1; echo "test gate_model rc=$?"
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
timeout 150 .carry/tinygpt gate --checkpoint models/shakespeare.safetensors > $R/gate.txt 2>&1; echo "gate rc=$?"
grep "speed\|: ACTIVE\|: off\|sample gate" $R/gate.txt | cut -c1-240; save
timeout 150 .carry/tinygpt gate --checkpoint models/nanogpt.safetensors > $R/gate-nanogpt.txt 2>&1; echo "gate nanogpt rc=$?"
grep "speed\|: ACTIVE\|: off\|sample gate" $R/gate-nanogpt.txt | cut -c1-240; save
echo "all: $(( $(date +%s) - t0 ))s"
