#!/bin/bash
# Device command 149 (2026-12-07; results in run149/). One build, H0: the
# kernels of e47826e with two more forms of matmul_coop_tiled.wgsl,
# `tiled-tall16` and `tiled-tall16-ahead2` — the 256×128 tile on 512
# invocations (sixteen subgroups of 32×64; run149-tall16.patch). The
# matmul rows (4096³ on every form) twice, the nanoGPT step twice, the
# card's matmul and reuse tests (every form's C against the base form's
# bits).
# Carry: .gl, .carry (summary.py: ../2026-12-07-astorage/summary.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r149; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
el() { echo "$1 rc=$2 $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
mm() { timeout 90 H0/tinygpt bench --shape matmuls > $R/matmuls-H0-$1.json 2> $R/matmuls-H0-$1.err; el "matmuls H0 $1" $?; save; }
step() { timeout 60 H0/tinygpt bench --shape nanogpt $2 > $R/shape-nanogpt-H0-$1.json 2> $R/shape-nanogpt-H0-$1.err; el "nanogpt H0 $1" $?; save; }
mm 1
python3 summary.py $R | grep "square" | cut -c1-120
step 1
for t in matmul_coop coop_reuse; do
  timeout 150 H0/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; el "test $t" $?
  grep -h "FAILED\|panicked\|test result\|DID NOT RUN" $R/test-$t.txt | cut -c1-200 | sort | uniq -c; save
done
mm 2
step 2
step tall16 "--coop-kernel tiled-tall16"
python3 summary.py $R | grep -v "^    regs"
el all 0
