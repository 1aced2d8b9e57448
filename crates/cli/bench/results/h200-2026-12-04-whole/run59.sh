#!/bin/bash
# Device command 59: the one-dispatch decode step (`DecoderKernels::Whole`,
# uncommitted build of this session): its tests and the decoder's (debug
# builds, stripped: decode_whole, decode, subgroups); `tinygpt bench --shape`
# of each preset twice (sampling rows in the `fused` and `whole` layouts
# side by side, f32 and f32 + subgroups; f16 storage in `fused`);
# `bench --profile --decode-only` in both layouts; PyTorch's KV-cache +
# CUDA-graph decoder in the same command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r59; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode_whole decode subgroups; do
  timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
cd .carry
for round in 1 2; do
  for s in tiny small nanogpt; do
    timeout 150 ./tinygpt bench --shape $s > $R/shape-$s-$round.json 2> $R/shape-$s-$round.err; echo "shape $s $round rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
for d in fused whole; do
  for s in tiny small nanogpt; do
    timeout 60 ./tinygpt bench --profile --decode-only --decoder $d --shape $s > $R/profile-$d-$s.json 2> $R/profile-$d-$s.err; echo "profile $d $s rc=$?"
  done
done; save
python3 - <<'PY'
import json, glob
R = "/tmp/r59"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, rnd = f.split("/")[-1][:-5].split("-")
    for t in d["sample"]:
        k = (s, t["path"], t["mode"][:6], t["samples"], t.get("decoder"))
        rows.setdefault(k, []).append(round(t["sample_tokens_per_s"]))
    for t in d["train"]:
        print("train", s, rnd, t["path"], round(t["ms_per_step"], 3))
for k, v in rows.items():
    print("sample", *k, v)
for l in open(f"{R}/pytorch_decode.jsonl"):
    print("pytorch", l.strip()[:300])
for d in ("fused", "whole"):
  for s in ("tiny", "small", "nanogpt"):
    try:
        for r in json.load(open(f"{R}/profile-{d}-{s}.json"))["profile"]:
            print(d, s, r["what"], r["dispatches"], round(r["gpu_total_us"], 1), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:8]))
    except Exception as e: print(d, s, "profile failed", e)
PY
echo "all: $(( $(date +%s) - t0 ))s"
