#!/bin/bash
# Device command 58: the tensor-core tests at the session's last code
# (after the review: the builder keeps each forward linear's two copies in one
# map, the residual back to its pre-session kernel, the GELU's layout in
# gelu.wgsl; run 57
# predates; coop_reuse checks the dW and dX reuse, 4 + 3 shapes); debug
# builds, stripped.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r58; mkdir -p $R $OUT
for t in coop_reuse coop_training matmul_coop; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked\|^test " $R/test-*.txt | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
tar czf $OUT/results.tar.gz -C $R .
