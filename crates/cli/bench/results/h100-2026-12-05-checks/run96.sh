#!/bin/bash
# Device command 96 (2026-12-05, nvidia-h100-x1; results in run96/). The
# build `6a8df88` (`tinygpt`: the tiled tensor-core kernel's plain and GELU
# pipelines loading the staged operands three blocks ahead on the base
# form, two on wide-2buf) against run 93's build (`tinygpt-93`): the
# tensor-core tests on the card, the matmul rows, the small and nanoGPT
# steps alternating (two rounds), PyTorch's training in the same command.
# Carry: .gl, .carry (bins96.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins96.tar.xz -C .carry || exit 1
R=/tmp/r96; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
timeout 90 ./tinygpt bench --shape matmuls > $R/matmuls.json 2> $R/matmuls.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"
python3 -c "
import json; d=json.load(open('$R/matmuls.json'))
print(' '.join(f\"{x['shape'][:10]}/{x.get('kernel','')}={x['tflops']:.1f}\" for x in d['matmul'] if x['path']=='coop-matrix'))"
for rnd in 1 2; do
  for b in tinygpt-93 tinygpt; do
    for s in small nanogpt; do
      timeout 90 ./$b bench --shape $s > $R/shape-$s-$b-$rnd.json 2> $R/shape-$s-$b-$rnd.err; echo "$s $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
      python3 -c "
import json; d=json.load(open('$R/shape-$s-$b-$rnd.json'))
print('$s', '$b', [(x['path'], round(x['ms_per_step'],3), x['final_loss']) for x in d['train']])"
    done
  done; save
done
timeout 150 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,compile --steps 30 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch_baseline rc=$? $(( $(date +%s) - t0 ))s"
cut -c1-160 $R/pytorch_baseline.jsonl
save
echo "all: $(( $(date +%s) - t0 ))s"
