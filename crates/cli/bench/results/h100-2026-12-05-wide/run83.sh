#!/bin/bash
# Device command 83 (ran 2026-12-05 on nvidia-h100-x1; results in run83/, figures in BENCHMARKS.md's runs 83–90). The build `ebd11e9`: the
# persistent decoder's wide form (`persistent-wide`, 512 invocations; the
# engine's own layout at tiny) and the pick inside the kernel (one
# dispatch a token). `tinygpt1024`: the same build with the wide form at
# 1,024 invocations (decode_persistent_wide.wgsl's WG 1024, NBUF 1, PART
# 4096), an experiment. The decoder's tests on the card; `bench --shape`
# at tiny on every persistent form and `prologue`, small on the engine's
# and `persistent-wide`, nanogpt once (two rounds alternating); PyTorch's
# decoders; decode profiles.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tinygpt1024, tests/*,
# pytorch_decode.py, pytorch_baseline.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r83; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
late() { [ $(( $(date +%s) - t0 )) -gt $1 ] && { echo "skipped $2 (time)"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode_persistent decode greedy_pick sample_pick; do
  timeout 90 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
for rnd in 1 2; do
  for run in "tinygpt tiny engine" "tinygpt1024 tiny engine" "tinygpt tiny persistent" "tinygpt tiny prologue" "tinygpt small engine" "tinygpt small persistent-wide" "tinygpt1024 small persistent-wide" "tinygpt nanogpt engine"; do
    set -- $run; b=$1; s=$2; v=$3
    [ $s = nanogpt ] && [ $rnd = 2 ] && continue
    late 330 "shape $b $s $v $rnd" && continue
    flag=""; [ $v != engine ] && flag="--decoder $v"; vn=${v/persistent-wide/pw}
    timeout 60 ./$b bench --shape $s $flag > $R/shape-$b-$s-$vn-$rnd.json 2> $R/shape-$b-$s-$vn-$rnd.err; echo "shape $b $s $v $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
  [ $rnd = 1 ] && { timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; save; }
done
for run in "tinygpt tiny persistent-wide" "tinygpt1024 tiny persistent-wide" "tinygpt tiny persistent" "tinygpt small persistent-wide"; do
  set -- $run; b=$1; s=$2; v=$3
  timeout 30 ./$b bench --profile --decode-only --shape $s --decoder $v > $R/profile-$b-$s-$v.json 2> $R/profile-$b-$s-$v.err; echo "$b $s $v profile rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r83"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    _, b, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((b, s, v, x["decoder"], x["path"], x["mode"][:12], x["samples"]), []).append(round(x["sample_tokens_per_s"]))
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
