#!/bin/bash
# Device command 123 (2026-12-06; results in run123/). The MLP's dX
# product with GELU′ in its epilogue, its GELU inputs loaded together
# before each tile is stored (new/, uncommitted on `a426aaa`), against
# run 122's `staged/` build (`3af16de` with the dX products staging W),
# carried in .carry/bins123.tar.xz: the new build's epilogue, matmul and
# training tests on the card; the nanoGPT step on each build alternated,
# three rounds. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins123.tar.xz -C .carry || exit 1
R=/tmp/r123; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in matmul_coop_gelu_grad matmul_coop coop_training; do
  timeout 120 .carry/new/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result" $R/test-*.txt | cut -c1-200 | sort | uniq -c | head
save
cd .carry
for rnd in 1 2 3; do
  for b in staged new; do
    timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary121.py $R | grep "^train nanogpt .* coop"
echo "all: $(( $(date +%s) - t0 ))s"
