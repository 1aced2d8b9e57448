#!/bin/bash
# Device command 80 (ran 2026-12-05 on nvidia-h100-x1; results in run80/, figures in BENCHMARKS.md's runs 77–82). Run 79: the `Persistent`
# kernel without private arrays took 94 µs a tiny token (Prologue 100)
# and 221 a small one (112). This build cuts its barriers (two-level
# block sums, a head's max and sum by one lane, double-buffered partials)
# and reads position P from the qkv row instead of the cache. The
# profiles as in run 79, then `bench --shape tiny` and `small` on both
# layouts and PyTorch's decoders.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tests/decode_persistent,
# pytorch_decode.py, pytorch_baseline.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r80; mkdir -p $R $OUT
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
timeout 90 python3 pytorch_decode.py --configs tiny,small --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; save
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("/tmp/r80/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    except Exception as ex: print("profile", f, ex)
for f in sorted(glob.glob("/tmp/r80/shape-*.json")):
    try:
        for x in json.load(open(f))["sample"]:
            print(f.split("/")[-1], x["decoder"], x["path"], x["mode"][:12], x["samples"], round(x["sample_tokens_per_s"]))
    except Exception as ex: print(f, ex)
for l in open("/tmp/r80/pytorch_decode.jsonl"):
    j = json.loads(l); print("pytorch_decode", j.get("config"), j.get("mode"), j.get("tokens_per_s"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
