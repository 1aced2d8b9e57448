#!/bin/bash
# Device command 74 (2026-12-05, H100 or H200: whichever is lent). After
# run 73 (H100): the decoder's one-kernel-a-head layout was slower than
# the kernels before it at every shape, and the fused LayerNorm backward
# slower than its two kernels. This build (`tinygpt`) decodes in the
# `Prologue` layout (each LayerNorm in its GEMV's prologue, the QKV GEMV,
# the attention, the head and the pick on their own: the layout before
# run 73's), has the LayerNorm backward's two kernels back, and runs the
# GELU backward in the fc projection's dX product (f32 path). Against
# `tinygpt-before` (ef7ac34: the fused decoder, the GELU backward on its
# own): the tests, `bench --shape` of both builds alternating (two rounds),
# PyTorch's decoders and training, the matmul rows with every tensor-core
# form (#15's 4096³), the nanoGPT step on each tiled form, tiny's profile.
# A time guard skips what would run past 500 s.
# Carry: .gl, .carry (bins.tar.xz: tinygpt, tinygpt-before, tests/*;
# pytorch_decode.py, pytorch_baseline.py, tinyshakespeare.txt).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r74; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
late() { [ $(( $(date +%s) - t0 )) -gt $1 ] && { echo "skipped $2 (time)"; return 0; }; return 1; }
for t in matmul_gelu decode layernorm matmul_coop coop_reuse; do
  timeout 60 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
shapes() {
  for s in tiny small nanogpt; do
    for v in before after; do
      late 420 "shape $s $v $1" && continue
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 60 $bin bench --shape $s > $R/shape-$s-$v-$1.json 2> $R/shape-$s-$v-$1.err; echo "shape $s $v $1 rc=$? $(( $(date +%s) - t0 ))s"
    done
  done; save
}
shapes 1
timeout 90 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
late 300 matmuls || { timeout 90 ./tinygpt bench --shape matmuls > $R/matmuls.json 2> $R/matmuls.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"; save; }
for k in tiled-2buf tiled-wide tiled-wide-2buf; do
  late 420 "nanogpt $k" && continue
  timeout 40 ./tinygpt bench --shape nanogpt --coop-kernel $k > $R/shape-nanogpt-$k.json 2> $R/shape-nanogpt-$k.err; echo "nanogpt $k rc=$? $(( $(date +%s) - t0 ))s"
done; save
shapes 2
late 480 "tiny profile" || { timeout 30 ./tinygpt bench --profile --shape tiny > $R/profile-tiny.json 2> $R/profile-tiny.err; echo "tiny profile rc=$?"; save; }
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r74"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*-*-[12].json")):
    try: d = json.load(open(f))
    except Exception as ex: print(f, ex); continue
    _, s, v, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(v, []).append(round(x["sample_tokens_per_s"]))
    for t in d["train"]:
        rows.setdefault((s, t["path"], "train", 0), {}).setdefault(v, []).append(round(t["ms_per_step"], 3))
for k, by in rows.items():
    print(*k, "| before", by.get("before"), "| after", by.get("after"))
for f in sorted(glob.glob(f"{R}/shape-nanogpt-tiled*.json")):
    try: print(f.split("/")[-1], [(t["path"], round(t["ms_per_step"], 3)) for t in json.load(open(f))["train"]])
    except Exception as ex: print(f, ex)
try:
    for m in json.load(open(f"{R}/matmuls.json"))["matmul"]:
        if "coop" in m["path"]: print(m["shape"][:30], m.get("kernel", ""), round(m["tflops"], 1), round(m["ms"], 3))
except Exception as ex: print("matmuls", ex)
try:
    for r in json.load(open(f"{R}/profile-tiny.json"))["profile"]:
        if "kernels" in r: print(r["config"], r["what"], r["dispatches"], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"]))
except Exception as ex: print("profile", ex)
for name in ("pytorch_decode", "pytorch"):
    for l in open(f"{R}/{name}.jsonl"):
        j = json.loads(l); print(name, j.get("config"), j.get("mode"), j.get("tokens_per_s"), j.get("ms_per_step"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
