#!/bin/bash
# Device command 43: the persistent decode step (`decode_step.wgsl`: a
# token's blocks and head in one dispatch whose 64 workgroups cross grid
# barriers). First the grid-barrier and decoder tests on the H200 (the
# several-workgroup cases lavapipe cannot run); then `tinygpt bench
# --shape` of each shape twice (every sampling row on the fused layout and
# on the persistent step, same binary), PyTorch's decoders in the same
# command, and the decode-chain profiles of both layouts.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r43; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in floor decode greedy_pick sample_pick; do
  timeout 60 .carry/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "DID NOT\|FAILED\|panicked\|test result" $R/test-*.txt | cut -c1-300; save
cd .carry
timeout 60 ./tinygpt bench --profile --decode-only > $R/profile.json 2> $R/profile.err; echo "profile rc=$?"; save
for round in 1 2; do
  for s in tiny small nanogpt; do
    timeout 100 ./tinygpt bench --shape $s > $R/shape-$s-$round.json 2> $R/shape-$s-$round.err; echo "shape $s $round rc=$?"
  done
done; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r43"
for r in json.load(open(f"{R}/profile.json"))["profile"]:
    if r["what"].startswith("decode_chain"):
        print(r["config"], r["what"], r["dispatches_per_token"], round(r["gpu_us_per_token"], 1), round(r["record_us_per_token"], 1), round(r["wall_us"] / r["chained_tokens"], 1))
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f))
    for s in d["sample"]:
        rows.setdefault((s["config"], s["path"], s["kernels"], s["mode"][:6], s["samples"]), []).append(round(s["sample_tokens_per_s"]))
    for t in d["train"]:
        print("train", t["config"], t["path"], round(t["ms_per_step"], 3))
for k, v in rows.items():
    print("sample", *k, v)
print(json.load(open(f"{R}/shape-tiny-1.json"))["floor"])
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
PY
echo "all: $(( $(date +%s) - t0 ))s"
