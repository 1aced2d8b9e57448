#!/bin/bash
# Device command 113 (2026-12-06; results in run113/). The build carried in
# .carry/bins113.tar.xz (`new/`; `r110/` is run 110's `new/`): the persistent decoder's packed-halves
# kernel with the f16 kernels' test-only faults as its own FAULT values —
# its tests on the card (the gate statistic passes the kernel and fails
# each fault; the f16-storage gate's own fault tests, `to_f16` now in a
# file of its own) and `tiny` (the persistent kernel's shape) against run
# 110's build (`r110/`), alternating,
# three rounds, PyTorch's decoder before and after. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins113.tar.xz -C .carry || exit 1
R=/tmp/r113; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode_persistent gate; do
  timeout 120 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "test result" $R/test-*.txt; grep -A1 -h "^f16acc\|^droptail" $R/test-decode_persistent.txt
cd .carry
torch_decode() { timeout 60 python3 pytorch_decode.py --configs tiny --tokens 200 >> $R/pytorch_decode.jsonl 2>> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; }
bench() { # build, round
  timeout 60 $1/tinygpt bench --shape tiny > $R/shape-tiny-$1-$2.json 2> $R/shape-tiny-$1-$2.err; echo "tiny $1 $2 rc=$? $(( $(date +%s) - t0 ))s"
}
new/tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU for the first timed bench
torch_decode
for rnd in 1 2 3; do bench new $rnd; bench r110 $rnd; save; done
torch_decode; save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|^train\|pytorch_decode"
echo "all: $(( $(date +%s) - t0 ))s"
