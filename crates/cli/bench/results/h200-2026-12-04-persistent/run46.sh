#!/bin/bash
# Device command 46: the test binaries of tinygpt-gpu that this session's
# changes touch (decoding, the GEMVs and their LayerNorm column groups, the
# picks, the f16-storage kernels and gates, the engine's sessions), built
# from 5d285e6 and run on the H200 — a GPU with real parallelism, where the
# 645-workgroup GEMV test runs its two column groups side by side. (The
# whole suite's 32 binaries no longer fit the 64 MiB carry: 19 MB packed.)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r46; mkdir -p $R $OUT
t0=$(date +%s); ok=1
for t in $(ls .carry/tests); do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; rc=$?; echo "test $t rc=$rc"; [ $rc = 0 ] || ok=0
done
echo "suite: $(( $(date +%s) - t0 ))s ok=$ok"
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | sort | uniq -c | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
tar czf $OUT/results.tar.gz -C $R .
