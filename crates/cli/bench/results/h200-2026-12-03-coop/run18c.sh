#!/bin/bash
# Device command 18c: the tensor-core tests after the dropped-K-tail fault
# variant of the coop kernel joined them (the gate must fail it).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1; mkdir -p $OUT; timeout 150 .carry/tests/coop_training --nocapture --test-threads 1 > $OUT/test-coop_training.txt 2>&1; echo rc=$?; grep -h "test result\|DID NOT\|FAILED\|panicked\|FAIL" $OUT/test-coop_training.txt | cut -c1-400
