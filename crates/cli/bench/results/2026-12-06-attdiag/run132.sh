#!/bin/bash
# Device command 132 (2026-12-06; results in run132/). Where the
# tensor-core attention kernels spend their time: five builds of
# `133c381` with `run132-diag.patch` applied, its `DIAG` constant 0 (the
# kernels as committed), 1 (no softmax / ds terms: the scalar loops between
# the products return at once), 2 (one product of QKᵀ-type per call, none
# of the PV-type), 3 (no workgroup barriers in the key/query loops) and 4
# (no loads of the blocks in those loops), carried in
# .carry/bins132.tar.xz; each times `bench`'s attention rows alone
# (TINYGPT_ATT_ONLY, a switch of the diagnostic builds only), two rounds.
# Results 1–4 are wrong; only their times count. Carry: .gl, .carry.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TINYGPT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1 TINYGPT_ATT_ONLY=1
tar -xJf .carry/bins132.tar.xz -C .carry || exit 1
R=/tmp/r132; mkdir -p $R $OUT
save() { tar czf $OUT/results.tar.gz -C $R .; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd .carry
for rnd in 1 2; do
  for n in 0 1 2 3 4; do
    timeout 60 d$n/tinygpt bench --shape nanogpt > $R/att-d$n-$rnd.json 2> $R/att-d$n-$rnd.err; echo "diag $n round $rnd rc=$? $(( $(date +%s) - t0 ))s"
  done; save
done
python3 - $R <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/att-*.json")):
    try:
        rows = json.load(open(f))["attention"]
    except Exception as e:
        print(os.path.basename(f), "unreadable", e); continue
    print(os.path.basename(f), " ".join(f"{r['kernel']}={r['us']:.1f}" for r in rows if r.get("shape") == "nanogpt"))
PY
echo "all: $(( $(date +%s) - t0 ))s"
