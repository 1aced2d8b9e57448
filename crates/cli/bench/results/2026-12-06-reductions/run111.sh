#!/bin/bash
# Device command 111 (2026-12-06; results in run111/). The measurement set
# of issue #16 in one command, on the submitted build (`new/` of
# .carry/bins110.tar.xz, the build run 110 timed): PyTorch's decoders and
# its training steps (fp32, TF32, bf16, torch.compile; fp32 again at the
# end) around two rounds of `bench --shape` at every shape, `tinygpt bench` of
# the matmul rows and the launch floor once, the profile of `tiny`. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins110.tar.xz -C .carry || exit 1
R=/tmp/r111; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
torch_decode() { timeout 60 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 >> $R/pytorch_decode.jsonl 2>> $R/pytorch_decode.err; echo "pytorch_decode rc=$? $(( $(date +%s) - t0 ))s"; }
torch_train() { timeout 200 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes $1 --steps 20 >> $R/pytorch_baseline.jsonl 2>> $R/pytorch_baseline.err; echo "pytorch_baseline rc=$? $(( $(date +%s) - t0 ))s"; }
bench() { # shape, round
  timeout 60 new/tinygpt bench --shape $1 > $R/shape-$1-new-$2.json 2> $R/shape-$1-new-$2.err; echo "$1 $2 rc=$? $(( $(date +%s) - t0 ))s"
}
torch_decode; torch_train fp32,tf32,bf16,compile
new/tinygpt bench --shape tiny > /dev/null 2>&1 # a warm GPU for the first timed bench
for s in tiny small nanogpt; do bench $s 1; done; save
torch_decode
for s in tiny small nanogpt; do bench $s 2; done; save
timeout 30 new/tinygpt bench --profile --shape tiny > $R/profile-tiny.json 2> $R/profile-tiny.err; echo "profile tiny rc=$? $(( $(date +%s) - t0 ))s"
timeout 60 new/tinygpt bench --shape matmuls > $R/matmuls-new.json 2> $R/matmuls-new.err; echo "matmuls rc=$? $(( $(date +%s) - t0 ))s"
torch_decode; torch_train fp32; save
python3 summary102.py $R | grep "greedy 1\|top-k 40, to 1\|to 8\|^train\|pytorch_\|4096"
echo "all: $(( $(date +%s) - t0 ))s"
