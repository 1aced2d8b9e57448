#!/bin/bash
# Device command 78 (ran 2026-12-05 on nvidia-h100-x1; results in run78/, figures in BENCHMARKS.md's runs 77–82). Run 77: the `Stack` layout
# was slower than `Prologue` at every shape (tiny 108 against 101 µs a
# token on the GPU). This build adds the `Persistent` layout (a whole
# token in one workgroup a sample, then the pick: two dispatches a
# token; C ≤ 256, so tiny and small). `bench --shape` with `--decoder`
# prologue, stack and persistent alternating at tiny and small (two
# rounds), nanogpt once on prologue; PyTorch's decoders between the
# rounds; the decode-only profiles; the decoder's tests on the card. A
# time guard skips what would run past 400 s.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tests/*, pytorch_decode.py,
# pytorch_baseline.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r78; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
late() { [ $(( $(date +%s) - t0 )) -gt $1 ] && { echo "skipped $2 (time)"; return 0; }; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in decode_persistent decode_proj gemv_fused decode; do
  timeout 90 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
shapes() {
  for s in tiny small nanogpt; do
    vs="prologue stack persistent"; [ $s = nanogpt ] && { [ $1 = 2 ] && continue; vs=prologue; }
    for v in $vs; do
      late 360 "shape $s $v $1" && continue
      timeout 60 ./tinygpt bench --shape $s --decoder $v > $R/shape-$s-$v-$1.json 2> $R/shape-$s-$v-$1.err; echo "shape $s $v $1 rc=$? $(( $(date +%s) - t0 ))s"
    done
  done; save
}
shapes 1
timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; save
shapes 2
for s in tiny small; do
  for v in prologue persistent; do
    late 400 "$s $v profile" || { timeout 30 ./tinygpt bench --profile --decode-only --shape $s --decoder $v > $R/profile-$s-$v.json 2> $R/profile-$s-$v.err; echo "$s $v profile rc=$?"; }
  done
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r78"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*-*-[12].json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        key = (s, x["path"], x["mode"][:12], x["samples"])
        rows.setdefault(key, {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items():
    print(*k, "| prologue", by.get("prologue"), "| stack", by.get("stack"), "| persistent", by.get("persistent"))
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    try:
        for r in json.load(open(f))["profile"]:
            if r.get("what", "").startswith("decode_chain"): print(f.split("/")[-1], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
            if r.get("what") == "decode_token": print(f.split("/")[-1], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"]))
    except Exception as ex: print("profile", f, ex)
try:
    for l in open(f"{R}/pytorch_decode.jsonl"):
        j = json.loads(l); print("pytorch_decode", j.get("config"), j.get("mode"), j.get("tokens_per_s"))
except Exception as ex: print("pytorch_decode", ex)
PY
echo "all: $(( $(date +%s) - t0 ))s"
