#!/bin/bash
# Device command 3: the gate's decoder forms on a GPU (LayerNorm prologues, residual epilogue).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cd .carry
./tinygpt-after gate 2>&1 | grep -v 'p50/p90\|rel_l2=.*cosine=' | tee $OUT/gate.txt
for f in droptail f16acc; do ./tinygpt-after gate --fault $f 2>&1 | grep 'M=1\|gate:' | cut -c1-220 | tee $OUT/gate-$f.txt; done
