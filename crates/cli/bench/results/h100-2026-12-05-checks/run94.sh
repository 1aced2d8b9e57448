#!/bin/bash
# Device command 94 (2026-12-05, nvidia-h100-x1; results in run94/). A
# diagnostic build of the tiled tensor-core kernel (branch `diag-coop`,
# not merged: `TINYGPT_COOP_DIAG=N` adds the pipeline constant DIAG = N to
# the plain tiled pipelines — bit 0 skips the K loop's global loads, bit 1
# its barriers, bit 2 its copies into the tiles), `bench --shape matmuls`
# once per N: where the 4096³ product's time goes.
# Carry: .gl, .carry (bins94.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins94.tar.xz -C .carry || exit 1
R=/tmp/r94; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for n in none 1 2 4 5 3 7 none; do
  if [ $n = none ]; then unset TINYGPT_COOP_DIAG; else export TINYGPT_COOP_DIAG=$n; fi
  timeout 90 ./tinygpt-diag bench --shape matmuls > $R/matmuls-$n.json 2> $R/matmuls-$n.err; echo "diag $n rc=$? $(( $(date +%s) - t0 ))s"
  python3 -c "
import json; d=json.load(open('$R/matmuls-$n.json'))
print('$n', ' '.join(f\"{x['shape'][:10]}/{x.get('kernel','')}={x['tflops']:.1f}\" for x in d['matmul'] if x['path']=='coop-matrix' and x.get('kernel','').startswith('tiled')))"
done; save
echo "all: $(( $(date +%s) - t0 ))s"
