#!/bin/bash
# Device command 30: run 28's decoder with the decode attention's K cache
# transposed per head (scores read neighbouring words). The decode and
# attention tests; `tinygpt bench` twice with PyTorch's KV-cache decoder (CUDA graph) and
# training anchors between them; the decode-token profiles; `tinygpt
# sample` of the bundled model three times (time to first token). Everything
# comes back as results.tar.gz.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r30; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for t in decode attention; do
  timeout 120 .carry/tests/$t --nocapture --test-threads 1 > $R/test-$t.txt 2>&1; echo "test $t rc=$?"
done
grep -h "test result\|DID NOT\|FAILED\|panicked" $R/test-*.txt | cut -c1-200
B=$PWD/.carry/tinygpt
for n in 1 2 3; do timeout 60 $B sample --checkpoint models/shakespeare.safetensors --prompt "ROMEO:" --length 200 > $R/sample-$n.txt 2>> $R/sample.err; echo "sample rc=$?"; done
cd .carry
timeout 150 ./tinygpt bench > $R/bench.json 2> $R/bench.err; echo "bench rc=$?"; save
timeout 150 python3 pytorch_decode.py --configs tiny,small,nanogpt --tokens 200 > $R/pytorch_decode.jsonl 2> $R/pytorch_decode.err; echo "pytorch_decode rc=$?"; save
timeout 120 python3 pytorch_baseline.py --configs tiny,small,nanogpt --modes fp32 --steps 20 > $R/pytorch.jsonl 2> $R/pytorch.err; echo "pytorch rc=$?"; save
timeout 150 ./tinygpt bench > $R/bench2.json 2> $R/bench2.err; echo "bench2 rc=$?"; save
for s in tiny small nanogpt; do timeout 60 ./tinygpt bench --profile --decode-only --shape $s > $R/profile-$s.json 2> $R/profile-$s.err; echo "profile $s rc=$?"; done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json
R = "/tmp/r30"
for f in ("bench", "bench2"):
    d = json.load(open(f"{R}/{f}.json"))
    for s in d["sample"]:
        print(f, s["config"], s["path"], s.get("mode"), s.get("samples"), round(s["sample_tokens_per_s"]))
    for t in d["train"]:
        print(f, t["config"], t["path"], round(t["ms_per_step"], 3))
    print(d.get("floor"))
for l in open(f"{R}/pytorch_decode.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["tokens_per_s"])
for l in open(f"{R}/pytorch.jsonl"):
    j = json.loads(l); print(j["config"], j["mode"], j["ms_per_step"])
for s in ("tiny", "small", "nanogpt"):
    for r in json.load(open(f"{R}/profile-{s}.json"))["profile"]:
        print(s, r["what"], r["dispatches"], round(r["gpu_total_us"]))
        for k in r["kernels"][:6]:
            print("   ", k["key"], k["calls"], round(k["mean_us"], 1), round(k["total_us"]))
PY
grep -h "first token" $R/sample-*.txt $R/sample.err | head -6
