#!/bin/bash
# Device command 38: how many tokens a sampling chunk should hold at most,
# four chunks queued: builds of this code with GREEDY_CHUNK 8 (committed),
# 16 and 32 (`tinygpt-cN`), `tinygpt bench --shape` alternating, three
# rounds of tiny and small, one of nanogpt.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1
tar -xJf .carry/bins.tar.xz -C .carry || exit 1
R=/tmp/r38; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
cd .carry
for round in 1 2 3; do
  for s in tiny small $([ $round = 1 ] && echo nanogpt); do
    for c in 8 16 32; do
      timeout 120 ./tinygpt-c$c bench --shape $s > $R/shape-$s-c$c-$round.json 2> $R/shape-$s-c$c-$round.err; echo "shape $s c$c $round rc=$?"
    done
  done
done; save
echo "all: $(( $(date +%s) - t0 ))s"
python3 - <<'PY'
import json, glob
rows = {}
for f in sorted(glob.glob("/tmp/r38/shape-*.json")):
    d = json.load(open(f)); _, s, c, rnd = f.split("/")[-1][:-5].split("-")
    for x in d["sample"]:
        rows.setdefault((s, x["path"], x["mode"][:6], x["samples"]), {}).setdefault(c, []).append(round(x["sample_tokens_per_s"]))
for k, by in rows.items():
    print(*k, "| c8", by.get("c8"), "| c16", by.get("c16"), "| c32", by.get("c32"))
PY
