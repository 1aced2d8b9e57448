#!/bin/bash
# Device command 35: the decoder's picked steps chained in one pass with no
# copies (two position uniforms, the pick writing the next step's
# position). The decode and pick tests on the H200; `tinygpt bench --shape`
# before (`tinygpt-before`, 3db3e2e) and after, alternating, twice for tiny
# and small, once for nanogpt; PyTorch's decoders in the same command; the
# decode profiles with the new timed chain (GPU µs a token back to back).
# Everything comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r35; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode greedy_pick sample_pick; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry
timeout 60 $B/tinygpt sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample.txt 2>> $R/sample.err; echo "sample rc=$?"
cd .carry
for round in 1 2; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for v in before after; do
      bin=./tinygpt; [ $v = before ] && bin=./tinygpt-before
      timeout 120 $bin bench --shape $s > $R/shape-$s-$v-$round.json 2> $R/shape-$s-$v-$round.err; echo "shape $s $v $round rc=$?"
    done
  done
done; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
for s in tiny small nanogpt; do timeout 60 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"; done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
R = "/tmp/r35"
for f in sorted(glob.glob(f"{R}/shape-*.json")):
    d = json.load(open(f)); name = f.split("/")[-1][6:-5]
    for s in d["sample"]:
        print(name, s["path"], s.get("mode")[:6], s.get("samples"), round(s["sample_tokens_per_s"]), [round(x) for x in s.get("sample_tokens_per_s_runs", [])])
    for t in d["train"]:
        print(name, "train", t["path"], round(t["ms_per_step"], 3))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        if r["what"] == "decode_chain":
            print(s, "chain", r["chained_tokens"], "tokens", round(r["gpu_us_per_token"], 1), "us/token gpu;", round(r["wall_us"] / r["chained_tokens"], 1), "us/token wall;", r["dispatches_per_token"], "dispatches")
        else:
            print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]))
PY
grep -h "first token" $R/sample.txt $R/sample.err | head -3
