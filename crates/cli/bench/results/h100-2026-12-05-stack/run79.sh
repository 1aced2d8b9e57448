#!/bin/bash
# Device command 79 (ran 2026-12-05 on nvidia-h100-x1; results in run79/, figures in BENCHMARKS.md's runs 77–82). Run 78: the `Persistent`
# kernel took 380 µs a tiny token (Prologue 100), 1,339 a small one —
# about 9 GB/s of weights through one workgroup. This build writes its
# linears' lanes out without private arrays. Tiny and small on prologue
# and persistent (one round), their decode-only profiles, its test.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tests/decode_persistent).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r79; mkdir -p $R $OUT
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
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("/tmp/r79/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    except Exception as ex: print("profile", f, ex)
PY
echo "all: $(( $(date +%s) - t0 ))s"
