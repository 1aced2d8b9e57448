#!/bin/bash
# Device command 89 (ran 2026-12-05 on nvidia-h100-x1; results in run89/, figures in BENCHMARKS.md's runs 83–90). `tinygpt`: `6210a83`
# (run 88's piped linears); `tinygpt-b1`: the same with the LayerNorm
# sums' first barrier dropped (two a sum instead of three), alternating,
# three rounds at tiny; PyTorch's tiny decoders; the persistent decoder's
# tests on the card; tiny's decode profiles.
# Carry: .gl, .carry (bins.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r89; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in; do
  timeout 90 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
cd .carry
for rnd in 1 2 3; do
  for run in "tinygpt x" "tinygpt-b1 x"; do
    set -- $run; b=$1; flag=""; [ $2 = apart ] && flag="--pick-apart"
    timeout 60 ./$b bench --shape tiny --decoder persistent $flag > $R/shape-$b-$2-$rnd.json 2> $R/shape-$b-$2-$rnd.err; echo "shape $b $2 $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
timeout 90 python3 pytorch_decode.py --configs tiny --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
for run in "tinygpt x" "tinygpt-b1 x"; do
  set -- $run; b=$1; flag=""; [ $2 = apart ] && flag="--pick-apart"
  timeout 30 ./$b bench --profile --decode-only --shape tiny --decoder persistent $flag > $R/profile-$b-$2.json 2> $R/profile-$b-$2.err; echo "$b $2 profile rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r89"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    b, how, rnd = f.split("/")[-1][len("shape-"):-5].rsplit("-", 2)
    for x in d["sample"]:
        rows.setdefault((b, how, x["decoder"], x.get("dispatches_per_token"), x["path"], x["mode"][:12], x["samples"]), []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items(): print(*k, by)
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    except Exception as ex: print("profile", f, ex)
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print("pytorch_decode", j.get("config"), j.get("mode"), j.get("tokens_per_s"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
