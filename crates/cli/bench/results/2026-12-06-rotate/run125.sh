#!/bin/bash
# Device command 125 (2026-12-06; results in run125/). The tiled
# tensor-core matmul's blocks loaded ahead in register sets taken in turn
# (rot/: no block moves between registers while its loads are in flight),
# and with its tiles in columns of 8 rows (grp/: GROUP_M 8), against
# `d358353` (prev/, the submitted build); x/ is grp/ with `tiled-2buf` at
# AHEAD 3 and `tiled-wide` at AHEAD 2 (their matmul rows only). Carried
# in .carry/bins125.tar.xz; one command: grp's tensor-core tests on the
# card; PyTorch's nanoGPT training; the matmul rows of each build
# alternated, two rounds; the nanoGPT step of each, two rounds; `small`
# and `tiny` of prev and grp; grp's profile. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins125.tar.xz -C .carry || exit 1
R=/tmp/r125; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop coop_reuse coop_training; do
  timeout 150 .carry/grp/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
timeout 120 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in prev rot grp x; do
    timeout 90 $b/tinygpt bench --shape matmuls > $R/matmuls-$b-$rnd.json 2> $R/matmuls-$b-$rnd.err; echo "matmuls $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for rnd in 1 2; do
  for b in prev rot grp; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
  timeout 60 grp/tinygpt bench --shape nanogpt --coop-kernel tiled-tall > $R/shape-nanogpt-grptall-$rnd.json 2> $R/shape-nanogpt-grptall-$rnd.err; echo "nanogpt grp tall $rnd rc=$? $(( $(date +%s) - t0 ))s"
  save
done
for s in small tiny; do
  for b in prev grp; do
    timeout 60 $b/tinygpt bench --shape $s > $R/shape-$s-$b-1.json 2> $R/shape-$s-$b-1.err; echo "$s $b rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 90 grp/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$? $(( $(date +%s) - t0 ))s"; save
python3 summary121.py $R | grep -v "^    " | grep "square\|train\|pytorch" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
