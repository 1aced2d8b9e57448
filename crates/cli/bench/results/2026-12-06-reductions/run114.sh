#!/bin/bash
# Device command 114 (2026-12-06; results in run114/). Where the nanoGPT
# step on tensor cores spends its 20 ms with the engine's kernels as they
# stand (run 113's `new/`, carried in .carry/bins113.tar.xz: the same
# kernels as the submitted code): `bench --profile --shape nanogpt`, every
# dispatch of one training step (f32 and tensor cores) and of a decoded
# token timed, summed per kernel. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins113.tar.xz -C .carry || exit 1
R=/tmp/r114; mkdir -p $R $OUT
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
new/tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU
timeout 120 new/tinygpt bench --profile --shape nanogpt > $R/profile-nanogpt.json 2> $R/profile-nanogpt.err; echo "profile nanogpt rc=$? $(( $(date +%s) - t0 ))s"
tar czf $OUT/results.tar.gz -C $R .
python3 summary102.py $R | grep -A 14 "train_step"
echo "all: $(( $(date +%s) - t0 ))s"
