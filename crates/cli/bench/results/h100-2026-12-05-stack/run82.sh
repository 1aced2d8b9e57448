#!/bin/bash
# Device command 82 (ran 2026-12-05 on nvidia-h100-x1; results in run82/, figures in BENCHMARKS.md's runs 77–82). The build to submit: the
# engine decodes tiny-width models (C ≤ 128) in the `Persistent` layout
# by itself (this commit's kernel loads biases, LayerNorm weights and the
# values' first round early). The decoder's tests on the card; `bench
# --shape` at every shape on the engine's own layout, and tiny also on
# `prologue` (two rounds alternating; nanogpt once); PyTorch's decoders;
# tiny's decode profiles on both layouts.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tests/*, pytorch_decode.py,
# pytorch_baseline.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r82; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
late() { [ $(( $(date +%s) - t0 )) -gt $1 ] && { echo "skipped $2 (time)"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode_persistent decode decode_proj decode_qkv gemv_fused; do
  timeout 90 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
for rnd in 1 2; do
  for run in "tiny engine" "tiny prologue" "small engine" "nanogpt engine"; do
    set -- $run; s=$1; v=$2
    [ $s = nanogpt ] && [ $rnd = 2 ] && continue
    late 300 "shape $s $v $rnd" && continue
    flag=""; [ $v != engine ] && flag="--decoder $v"
    timeout 60 ./tinygpt bench --shape $s $flag > $R/shape-$s-$v-$rnd.json 2> $R/shape-$s-$v-$rnd.err; echo "shape $s $v $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
  [ $rnd = 1 ] && { timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; save; }
done
for v in persistent prologue; do
  timeout 30 ./tinygpt bench --profile --decode-only --shape tiny --decoder $v > $R/profile-tiny-$v.json 2> $R/profile-tiny-$v.err; echo "tiny $v profile rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r82"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, v, x["decoder"], x["path"], x["mode"][:12], x["samples"]), []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items(): print(*k, by)
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    except Exception as ex: print("profile", f, ex)
try:
    for l in open(f"{R}/pytorch_decode.jsonl"):
        j = json.loads(l); print("pytorch_decode", j.get("config"), j.get("mode"), j.get("tokens_per_s"))
except Exception as ex: print("pytorch_decode", ex)
PY
echo "all: $(( $(date +%s) - t0 ))s"
