#!/bin/bash
# Device command 137 (2026-12-07; results in run137/). Builds, from
# .carry/bins137.tar.xz: cur/ (`61f4c88`: the kernels as submitted in
# `06255e2` — dK/dV's dS-tile pipelines — with `bench --profile
# --pipeline-stats` and `bench --attention-only`) and f4/ (cur with a
# diagnostic: the tensor-core attention's register copies of a block,
# `Fetched`, sized 4 instead of 16 — what a 128-invocation workgroup uses;
# wrong for narrower subgroups, so timing only); op/ (`26ea57d`: the
# tensor-core forward in one pass, with run134-coopfwd.patch:
# TINYGPT_COOP_FWD=1 binds it in the training graph). The tensor-core tests
# on the card (op's attention_coop: both dK/dV kernels, the rescaling
# test; cur's others); each build's nanoGPT profile with the driver's
# statistics of every pipeline; the attention rows of each, two rounds;
# PyTorch's nanoGPT training; the nanoGPT step of each (op with its
# forward bound), two rounds. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
tar -xJf .carry/bins137.tar.xz -C .carry || exit 1
R=/tmp/r137; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in attention_coop matmul_coop coop_reuse coop_training; do
  b=cur; [ $t = attention_coop ] && b=op
  timeout 150 .carry/$b/tests/$t --test-threads 1 --nocapture > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - t0 ))s"
done
grep -h "FAILED\|panicked\|test result\|DID NOT\|did not run" $R/test-*.txt | cut -c1-220 | sort | uniq -c | head -20
save
cd .carry
for b in cur f4 op; do
  TINYGPT_COOP_FWD=1 timeout 120 $b/tinygpt bench --profile --shape nanogpt --pipeline-stats > $R/profile-$b.json 2> $R/profile-$b.err; echo "profile $b rc=$? $(( $(date +%s) - t0 ))s"; tail -2 $R/profile-$b.err
done; save
python3 - $R <<'PY'
import json, sys
for b in ["cur", "f4", "op"]:
    try: ps = json.load(open(f"{sys.argv[1]}/profile-{b}.json"))["pipeline_stats"]
    except Exception as ex: print(b, ex); continue
    if "error" in ps: print(b, ps["error"]); continue
    rows = ps["pipelines"]; print(b, ps["device"], len(rows), "pipelines")
    if b == "cur" and rows and rows[0].get("executables"): print("  names:", list(rows[0]["executables"][0]["stats"]))
    for r in rows:
        if not any(k in r["key"] for k in ["coop", "attention", "matmul", "gelu", "layernorm"]): continue
        for e in r.get("executables", []):
            print(f"  {r['key'][:44]:44} {'P' if r['profiled'] else '-'} sg{e['subgroup_size']}", " ".join(f"{k[:14]}={v:g}" for k, v in e["stats"].items()))
        if "error" in r: print(f"  {r['key']}: {r['error'][:150]}")
PY
for rnd in 1 2; do
  for b in cur f4 op; do
    timeout 60 $b/tinygpt bench --attention-only --shape nanogpt > $R/att-$b-$rnd.json 2> $R/att-$b-$rnd.err; echo "att $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done
done; save
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    try: rows = json.load(open(f))["attention"]
    except Exception as ex: print(f, ex); continue
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
timeout 150 python3 pytorch_baseline.py --configs nanogpt --modes fp32,tf32,compile --steps 20 > $R/pytorch_baseline.jsonl 2> $R/pytorch_baseline.err; echo "pytorch rc=$? $(( $(date +%s) - t0 ))s"; save
for rnd in 1 2; do
  for b in cur f4 op; do
    TINYGPT_COOP_FWD=1 timeout 60 $b/tinygpt bench --shape nanogpt > $R/shape-nanogpt-$b-$rnd.json 2> $R/shape-nanogpt-$b-$rnd.err; echo "nanogpt $b $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 summary121.py $R | grep -v "^    " | grep "train nanogpt\|pytorch" | grep -v "f16-" | cut -c1-150
echo "all: $(( $(date +%s) - t0 ))s"
