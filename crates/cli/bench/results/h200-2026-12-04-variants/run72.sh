#!/bin/bash
# Device command 72 — PLANNED, not yet run (no device machine was lent
# after run 71 in the session of 2026-12-04 evening). The tiled tensor-core
# kernel's forms (`coop::TiledForm`: `tiled`, `tiled-2buf`, `tiled-wide`,
# `tiled-wide-2buf`) against the build before them (`tinygpt-before`,
# e37d0b6): the tensor-core tests (each form's golden, its bits equal to
# the base form's, its reuse pipelines); `bench --shape matmuls` (every
# kernel's rows, 4096³ included); `bench --shape nanogpt` and `small` with
# each form's step (`--coop-kernel`), the base form against the build
# before; `tiny` (the f32 path, with this session's fused
# residual-LayerNorm and GELU epilogue) against the build before, and its
# profile; the fastest form's nanoGPT profile; PyTorch's training in the
# same command. Carry: .gl, .carry (bins.tar.xz: tinygpt, tinygpt-before,
# tests/{matmul_coop,coop_reuse,coop_training}; pytorch_baseline.py).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r72; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in matmul_coop coop_reuse coop_training; do
  timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-220 | head -20
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
save
cd .carry
timeout 120 ./tinygpt bench --shape matmuls > $R/matmuls.json 2> $R/matmuls.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"; save
for s in nanogpt small; do
  timeout 100 ./tinygpt-before72 bench --shape $s > $R/shape-$s-before.json 2> $R/shape-$s-before.err; echo "$s before rc=$?"
  for k in tiled tiled-2buf tiled-wide tiled-wide-2buf; do
    timeout 100 ./tinygpt bench --shape $s --coop-kernel $k > $R/shape-$s-$k.json 2> $R/shape-$s-$k.err; echo "$s $k rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
# tiny trains on the f32 path: this build (the fused residual-LayerNorm
# and GELU epilogue) against the build before, twice each, and its profile.
for round in 1 2; do
  for v in before after; do
    bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before72
    timeout 100 $bin bench --shape tiny > $R/shape-tiny-$v-$round.json 2> $R/shape-tiny-$v-$round.err; echo "tiny $v $round rc=$?"
  done
done
timeout 60 ./tinygpt bench --profile --shape tiny > $R/profile-tiny.json 2> $R/profile-tiny.err; echo "tiny profile rc=$?"; save
best=$(python3 -c "
import json
def ms(k):
    try: return [t['ms_per_step'] for t in json.load(open('$R/shape-nanogpt-' + k + '.json'))['train'] if t['path'] == 'coop-matrix'][0]
    except Exception: return 1e9
print(min(['tiled', 'tiled-2buf', 'tiled-wide', 'tiled-wide-2buf'], key=ms))")
echo "fastest nanogpt step: $best"
timeout 60 ./tinygpt bench --profile --shape nanogpt --coop-kernel $best > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
timeout 200 python3 pytorch_baseline.py --configs small,nanogpt --modes fp32,tf32,bf16,compile --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r72"
for m in json.load(open(f"{R}/matmuls.json"))["matmul"]:
    if "coop" in m["path"]: print(m["shape"][:30], m.get("kernel", ""), round(m["tflops"], 1), round(m["ms"], 3))
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    try:
        for t in json.load(open(f))["train"]:
            if t["path"] in ("coop-matrix", "f32"): print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
    except Exception as ex: print(f, ex)
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j.get("ms_per_step"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
