#!/bin/bash
# Device command 66: run 65 found the tensor-core weight gradients' slices
# capped by the scratch the f32 rule sizes (nanoGPT: 135–144 workgroups,
# about one an SM). Here the scratch twice as large (TINYGPT_EXP_SCRATCH=2)
# with the split sized to at most 256 workgroups (floor) or at least 256
# (ceil), against today's (×1, ceil); one binary, alternating, two rounds
# of `bench --shape nanogpt`, one of `small`; the nanoGPT profile of
# floor ×2.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
[ -e /work/main ] || { mkdir -p /work; ln -s "$PWD" /work/main; }
R=/tmp/r66; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
for round in 1 2; do
  for s in nanogpt small; do
    [ $s = small ] && [ $round = 2 ] && continue
    for v in ceil-1 floor-2 ceil-2; do
      TINYGPT_EXP_SPLIT=${v%-*} TINYGPT_EXP_SCRATCH=${v#*-} timeout 120 ./tinygpt bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "$s $v $round rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done; save
TINYGPT_EXP_SPLIT=floor TINYGPT_EXP_SCRATCH=2 timeout 40 ./tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile rc=$?"; save
python3 - <<'PY'
import json, glob
R = "/tmp/r66"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    for t in json.load(open(f))["train"]:
        if t["path"] == "coop-matrix": print(f.split("/")[-1], t["path"], round(t["ms_per_step"], 3), t["final_loss"])
for r in json.load(open(f"{R}/profile-nanogpt.json"))["profile"]:
    if r["what"] == "train_step_coop":
        print(r["what"], r["dispatches"], round(r["gpu_total_us"]), " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.1f}" for k in r["kernels"][:12]))
PY
echo "all: $(( $(date +%s) - t0 ))s"
