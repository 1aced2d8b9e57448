#!/bin/bash
# Device command 2: the floor row, the profile and the new gate on the H200.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=/tmp/r; mkdir -p $R
save() { tar czf $OUT/results.tar.gz -C $R .; }
cd .carry
./tinygpt-after bench > $R/bench.json 2> $R/bench.err; save
./tinygpt-after bench --profile > $R/profile.json 2> $R/profile.err; save
./tinygpt-after gate > $R/gate.txt 2>&1; save
./tinygpt-after gate --checkpoint ../models/shakespeare.safetensors > $R/gate-model.txt 2>&1; save
./tinygpt-after gate --fault droptail > $R/gate-droptail.txt 2>&1; save
python3 -c "import json; d=json.load(open('$R/bench.json')); print(d['floor']); print([(t['config'], round(t['ms_per_step'],3)) for t in d['train']]); print([(s['config'], s['path'], round(s['sample_tokens_per_s'])) for s in d['sample']])"
tail -5 $R/gate.txt $R/gate-model.txt
