#!/bin/bash
# Device command 73 — run on 2026-12-05 at 07:45 UTC on an NVIDIA H100
# (no H200 could be started; results in run73/, BENCHMARKS.md). Written
# in the session before, when no device machine was lent. The decoder's fused kernels of that session —
# a head's first LayerNorm, QKV columns and attention in one kernel, and the
# final LayerNorm, head and pick in one (`tiny`/`small` 22 → 17 dispatches a
# chained token, `nanogpt` 32 → 25) — against the build before them
# (`tinygpt-before`, ec40884): the decoder's tests on the H200 (the fused
# kernels against the separate ones, bit for bit; the fused head's storage
# buffers; the subgroup forms), `tinygpt bench --shape` of both builds
# alternating, two rounds (greedy, top-k/top-p and 8 samples, f32 and f16
# storage; training too), this build's decode profile, and PyTorch's
# decoders and training in the same command. Added 2026-12-05 05:00: a third
# build, `tinygpt-ln` (this build + the LayerNorm backward's dx and dw/db
# partials in one dispatch), in the same alternation, its layernorm test,
# and its `tiny` training profile.
# Carry: .gl, .carry (bins.tar.xz: tinygpt (HEAD, release, stripped),
# tinygpt-before73 (ec40884, built from a worktree,
# CARGO_TARGET_DIR=target-before), tests/{decode,decode_qkv,
# head_pick,subgroups,greedy_pick,sample_pick,shaders} (`cargo test -p
# tinygpt-gpu --no-run --test …`, target/debug/deps, stripped);
# pytorch_decode.py, pytorch_baseline.py, tinyshakespeare.txt).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r73; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode decode_qkv head_pick subgroups greedy_pick sample_pick shaders layernorm; do
  timeout 60 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
for round in 1 2; do
  for s in tiny small nanogpt; do
    for v in before after ln; do
      [ $(( $(date +%s) - t0 )) -gt 360 ] && { echo "skipped $s $v $round (time)"; continue; }
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before73; [ $v = ln ] && bin=./tinygpt-ln
      timeout 100 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
timeout 100 ./tinygpt bench --profile --decode-only > $R/profile.json 2> $R/profile.err; echo "profile rc=$?"; save
timeout 60 ./tinygpt-ln bench --profile --shape tiny > $R/profile-tiny-ln.json 2> $R/profile-tiny-ln.err; echo "tiny profile rc=$?"; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small --modes fp32,tf32,compile --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r73"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
    for t in d["train"]:
        rows.setdefault((s, t["path"], "train", 0), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print(*k, "| before", by.get("before"), "| after", by.get("after"), "| ln", by.get("ln"))
for r in json.load(open(f"{R}/profile-tiny-ln.json"))["profile"]:
    print(r["config"], r["what"], r["dispatches"], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"]))
for r in json.load(open(f"{R}/profile.json"))["profile"]:
    if r["what"].startswith("decode_chain"):
        print(r["config"], r["what"], r["samples"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1))
    else:
        print(r["config"], r["what"], r["dispatches"], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"]))
for name in ("pytorch_decode", "pytorch"):
    for l in open(f"{R}/{name}.jsonl"):
        j = json.loads(l); print(name, j.get("config"), j.get("mode"), j.get("tokens_per_s"), j.get("ms_per_step"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
