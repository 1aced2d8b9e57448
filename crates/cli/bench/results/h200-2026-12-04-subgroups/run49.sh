#!/bin/bash
# Device command 49: where the decode attention's time goes, and the
# subgroups speed gate timing tokens as sampling decodes them. The binary
# is 0d3c777's with an experiment not committed: TINYGPT_ATTN_STOP=n
# binds attention_decode.wgsl with `override STOP` = n, which returns
# after the append (1), after the scores (2), after the reductions (3),
# after the weighted values (4); 0 is the whole kernel. `bench --profile
# --decode-only` for each, then `tinygpt gate` with the bundled model and
# with models/nanogpt.safetensors (the speed gate retimed at its shape).
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r49; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
for st in 0 1 2 3 4 0; do
  TINYGPT_ATTN_STOP=$st timeout 100 .carry/tinygpt bench --profile --decode-only > $R/profile-stop$st.json 2> $R/profile-stop$st.err; echo "profile stop $st rc=$?"
done; save
timeout 120 .carry/tinygpt gate --checkpoint models/shakespeare.safetensors > $R/gate.txt 2>&1; echo "gate rc=$?"
grep -i "subgroups speed\|subgroups sample\|subgroups:" $R/gate.txt | cut -c1-260; save
timeout 150 .carry/tinygpt gate --checkpoint models/nanogpt.safetensors > $R/gate-nanogpt.txt 2>&1; echo "gate nanogpt rc=$?"
grep -i "subgroups speed\|subgroups sample\|subgroups:\|on the loaded" $R/gate-nanogpt.txt | cut -c1-260; save
python3 - <<'PY'
import json, glob
R = "/tmp/r49"
for st in range(5):
    d = json.load(open(f"{R}/profile-stop{st}.json"))
    for r in d["profile"]:
        if r["what"] in ("decode_token", "decode_token_subgroups"):
            a = [k for k in r["kernels"] if k["key"].startswith("a")]
            print("stop", st, r["config"], r["what"], " ".join(f"{k['key']} {k['calls']}x{k['mean_us']:.2f}" for k in a))
        if r["what"] in ("decode_chain", "decode_chain_subgroups"):
            print("stop", st, r["config"], r["what"], round(r["gpu_us_per_token"], 1))
PY
echo "all: $(( $(date +%s) - t0 ))s"
