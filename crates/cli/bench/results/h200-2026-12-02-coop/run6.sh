#!/bin/bash
# Device command 6: the direct tensor-core kernel with four subgroups per
# workgroup — its tests, the bench, the ceilings, in one command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
cd .carry
TINYGPT_REQUIRE_GPU=1 ./test-matmul-coop --nocapture --test-threads=1 > $R/test-matmul-coop.txt 2>&1; echo "coop tests rc=$?" >> $R/test-matmul-coop.txt
grep -h "rc=\|golden\|coop gate" $R/test-matmul-coop.txt | cut -c1-200
timeout 240 ./tinygpt bench > $R/bench.json 2> $R/bench.err; save
python3 -c "import json; d=json.load(open('$R/bench.json')); [print(m['shape'], m['path'], round(m['tflops'],1), round(m['ms'],3)) for m in d['matmul']]"
timeout 120 python3 ceilings.py > $R/ceilings.json 2> $R/ceilings.err; save
cat $R/ceilings.json
