#!/bin/bash
# Device command 105 (2026-12-06; results in run105/): the decode profile
# of the submitted build (.carry/bins105.tar.xz; run 104 profiled the
# values-ahead form it measured and left out) and its tokens/s once, with
# PyTorch's KV-cache + CUDA-graph decoder in the same command.
# Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins105.tar.xz -C .carry || exit 1
R=/tmp/r105; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for s in small nanogpt; do
  timeout 30 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$? $(( $(date +%s) - t0 ))s"
done; save
for s in small nanogpt; do
  timeout 40 ./tinygpt bench --shape $s > $R/shape-$s-new-1.json 2> $R/shape-$s-new-1.err; echo "$s rc=$? $(( $(date +%s) - t0 ))s"
done; save
timeout 40 python3 pytorch_decode.py --configs small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"
save
python3 summary102.py $R | grep "greedy 1\|pytorch_decode\|decode_chain \|decode_chain_sub\|attention_decode\|gemv_f32\|greedy_pick"
echo "all: $(( $(date +%s) - t0 ))s"
