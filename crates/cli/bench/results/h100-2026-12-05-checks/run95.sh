#!/bin/bash
# Device command 95 (2026-12-05, nvidia-h100-x1; results in run95/). The
# tiled tensor-core kernel with the staged operands loaded AHEAD = 1 (as
# before), 2 or 3 blocks ahead (main's `7ccfd92`; the diagnostic build of
# branch `diag-coop` sets the constant on every tiled pipeline from
# TINYGPT_COOP_AHEAD): the matmul rows, then the small and nanoGPT
# tensor-core steps, alternating.
# Carry: .gl, .carry (bins94.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins94.tar.xz -C .carry || exit 1
R=/tmp/r95; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for n in 1 2 3 1 2 3; do
  export TINYGPT_COOP_AHEAD=$n
  timeout 90 ./tinygpt-diag bench --shape matmuls > $R/matmuls-$n.json 2> $R/matmuls-$n.err; echo "ahead $n rc=$? $(( $(date +%s) - t0 ))s"
  python3 -c "
import json; d=json.load(open('$R/matmuls-$n.json'))
print('$n', ' '.join(f\"{x['shape'][:10]}/{x.get('kernel','')}={x['tflops']:.1f}\" for x in d['matmul'] if x['path']=='coop-matrix' and x.get('kernel','').startswith('tiled')))"
done; save
for rnd in 1 2; do
  for n in 1 2 3; do
    export TINYGPT_COOP_AHEAD=$n
    for s in small nanogpt; do
      timeout 90 ./tinygpt-diag bench --shape $s --decoder prologue > $R/shape-$s-$n-$rnd.json 2> $R/shape-$s-$n-$rnd.err; echo "$s ahead $n rc=$? $(( $(date +%s) - t0 ))s"
      python3 -c "
import json; d=json.load(open('$R/shape-$s-$n-$rnd.json'))
print('$s', '$n', [(x['path'], round(x['ms_per_step'],3), x['final_loss']) for x in d['train'] if x['path']=='coop-matrix'])"
    done
  done; save
done
echo "all: $(( $(date +%s) - t0 ))s"
