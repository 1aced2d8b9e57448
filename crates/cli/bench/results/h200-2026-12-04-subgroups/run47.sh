#!/bin/bash
# Device command 47: the subgroups lever (5d3abde) on the H200. First the
# test binaries it touches (subgroups, the fused GEMVs, decoding, the gate
# faults; debug builds, stripped); then `tinygpt gate` with the bundled
# model (precision, speed and sample gates); then `tinygpt bench --shape`
# for each shape, two rounds — every sampling row on f32, f16 storage,
# f32 + subgroups and f16 storage + subgroups in the same process — and
# PyTorch's KV-cache + CUDA-graph decoder in the same command.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r47; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in subgroups gemv_fused decode; do
  timeout 120 .carry/tests/$t --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
timeout 150 .carry/tests/gate_model a_failed_gate --test-threads 1 > $R/test-gate_model.txt 2>&1; echo "test gate_model (a_failed_gate) rc=$?"
grep -h "did not run\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
cat $R/test-*.txt | grep "test result" | awk '{p+=$4; f+=$6} END {print "passed", p, "failed", f}'
echo "tests: $(( $(date +%s) - t0 ))s"; save
timeout 120 .carry/tinygpt gate --checkpoint models/shakespeare.safetensors > $R/gate.txt 2>&1; echo "gate rc=$?"
grep -i "subgroups" $R/gate.txt | cut -c1-260; save
cd .carry
for round in 1 2; do
  for s in tiny small nanogpt; do
    timeout 120 ./tinygpt bench --shape $s > $R/shape-$s-$round.json 2> $R/shape-$s-$round.err; echo "shape $s $round rc=$?"
  done
done; save
timeout 100 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r47"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); _, s, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["mode"][:6], x["samples"]), {}).setdefault(x["path"], []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items():
    print(*k, " | ".join(f"{p} {v}" for p, v in by.items()))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
PY
echo "all: $(( $(date +%s) - t0 ))s"
