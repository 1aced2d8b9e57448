#!/bin/bash
# Device command 81 (ran 2026-12-05 on nvidia-h100-x1; results in run81/, figures in BENCHMARKS.md's runs 77–82). Run 80: the `Persistent`
# kernel with fewer barriers took 84 µs a tiny token (Prologue 99; 10,767
# greedy tok/s against 8,815) and 194 a small one (111). This build loads
# each block of weights one block ahead, and adds a round's lanes with
# subgroup shuffles on the subgroups path. As run 80, without PyTorch
# (run 80 has its decoders).
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tests/decode_persistent).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r81; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
timeout 90 .carry/tests/decode_persistent --test-threads 1 > $R/test-decode_persistent.txt 2>&1; echo "test rc=$? $(( $(date +%s) - t0 ))s"
grep "test result" $R/test-*.txt
cd .carry
for s in tiny small; do
  for v in persistent prologue; do
    timeout 30 ./tinygpt bench --profile --decode-only --shape $s --decoder $v > $R/profile-$s-$v.json 2> $R/profile-$s-$v.err; echo "$s $v profile rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
for s in tiny small; do
  for v in persistent prologue; do
    timeout 40 ./tinygpt bench --shape $s --decoder $v > $R/shape-$s-$v.json 2> $R/shape-$s-$v.err; echo "shape $s $v rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("/tmp/r81/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    except Exception as ex: print("profile", f, ex)
for f in sorted(glob.glob("/tmp/r81/shape-*.json")):
    try:
        for x in json.load(open(f))["sample"]:
            print(f.split("/")[-1], x["decoder"], x["path"], x["mode"][:12], x["samples"], round(x["sample_tokens_per_s"]))
    except Exception as ex: print(f, ex)
PY
echo "all: $(( $(date +%s) - t0 ))s"
