#!/bin/bash
# Device command 71 (2026-12-04, 21:40 UTC) — LOST: the device machine
# stopped answering during it and nothing came back (about 520 s of device
# time spent); no figure of this session comes from it. Kept as what it ran:
# the tiled tensor-core kernel's forms through an experimental environment
# variable, TINYGPT_EXP_TILED (pipeline constants DBUF and WG of
# shaders/matmul_coop_tiled.wgsl; the hook was not committed — the forms
# are now `coop::TiledForm`, timed by run72.sh); each: the tensor-core
# tests and `bench --shape matmuls`; then `bench --shape nanogpt` as it was
# and with the form of the fastest 4096³.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r71; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for v in none DBUF=1 WG=128 DBUF=1,WG=128; do
  e=$v; [ $v = none ] && e=
  export TINYGPT_EXP_TILED=$e
  for t in matmul_coop coop_reuse coop_training; do
    timeout 100 .carry/tests/$t --test-threads 1 > $R/test-$v-$t.txt 2>&1; echo "$v test $t rc=$?"
  done
  (cd .carry && timeout 100 ./tinygpt bench --shape matmuls > $R/matmuls-$v.json 2> $R/matmuls-$v.err; echo "$v matmuls rc=$?")
  save
done
