#!/bin/bash
# Device command 87 (ran 2026-12-05 on nvidia-h100-x1; results in run87/, figures in BENCHMARKS.md's runs 83–90). The build `d29f839`: the
# wide persistent kernel (`--decoder persistent-wide`, 512 invocations,
# rounds of 256 columns) in its final form against the engine's
# `persistent` at tiny, and at small, two rounds alternating; decode
# profiles of both.
# Carry: .gl, .carry (bins.tar.xz).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r87; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for rnd in 1 2; do
  for run in "tiny persistent" "tiny persistent-wide" "small persistent-wide"; do
    set -- $run; s=$1; v=$2; vn=${v/persistent-wide/pw}
    timeout 60 ./tinygpt bench --shape $s --decoder $v > $R/shape-$s-$vn-$rnd.json 2> $R/shape-$s-$vn-$rnd.err; echo "shape $s $v $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
for run in "tiny persistent" "tiny persistent-wide" "small persistent-wide"; do
  set -- $run; s=$1; v=$2; vn=${v/persistent-wide/pw}
  timeout 30 ./tinygpt bench --profile --decode-only --shape $s --decoder $v > $R/profile-$s-$vn.json 2> $R/profile-$s-$vn.err; echo "$s $v profile rc=$?"
done; save
echo "measured: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r87"
rows = {}
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f))
    s, v, rnd = f.split("/")[-1][len("shape-"):-5].rsplit("-", 2)
    for x in d["sample"]:
        if x["mode"].startswith("greedy") or x["samples"] > 1 and x["path"] == "f32":
            rows.setdefault((s, x["decoder"], x.get("dispatches_per_token"), x["path"], x["mode"][:12], x["samples"]), []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items(): print(*k, by)
for f in sorted(glob.glob(f"{R}/profile-*.json")):
    for r in json.load(open(f))["profile"]:
        if r.get("what", "") in ("decode_chain", "decode_token"):
            print(f.split("/")[-1], r["what"], r.get("dispatches_per_token"), round(r.get("gpu_us_per_token", r.get("gpu_total_us", 0)), 1), [(k["key"], round(k["mean_us"], 1)) for k in r.get("kernels", [])])
PY
echo "all: $(( $(date +%s) - t0 ))s"
