#!/bin/bash
# Device command 103 (2026-12-06; results in run103/). The build carried in
# .carry/bins103.tar.xz: run 102's (the decoder's GEMVs and attention on
# pipelines per shape, `KC` / `HS_C`; the LayerNorm GEMVs' loads ahead of
# the statistics) and the GEMVs' bias and residual loaded ahead, the decode
# attention's new key and value from workgroup memory (no storage
# barrier) and a group's first eight rows of values loaded before the
# scores — against the build of run 101 (.carry/bins101.tar.xz,
# `77e335a`), one after the other, two rounds; the decoder's, the GEMVs'
# and the attention's tests on the card; the decode profiles; PyTorch's
# KV-cache + CUDA-graph decoder in the same command. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
mkdir -p .carry/old && tar -xJf .carry/bins101.tar.xz -C .carry/old || exit 1
tar -xJf .carry/bins103.tar.xz -C .carry || exit 1
R=/tmp/r103; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode decode_qkv decode_proj head_pick gemv_fused gemv matmul_f16w subgroups attention; do
  timeout 120 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked\|bit for bit" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
bench() { # build dir, its name, shape, round
  timeout 90 $1/tinygpt bench --shape $3 > $R/shape-$3-$2-$4.json 2> $R/shape-$3-$2-$4.err; echo "$3 $2 $4 rc=$? $(( $(date +%s) - t0 ))s"
}
for rnd in 1 2; do
  for s in small nanogpt; do bench . new $s $rnd; bench old old $s $rnd; done; save
done
for s in small nanogpt; do
  timeout 60 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary103.py $R
echo "all: $(( $(date +%s) - t0 ))s"
