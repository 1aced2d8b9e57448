#!/usr/bin/env python3
"""Turns one device run's outputs into the ratio tables of BENCHMARKS.md.

Usage: report.py DIR   (DIR holds bench.json from `tinygpt bench`,
pytorch.jsonl from pytorch_baseline.py and ceilings.json from ceilings.py,
all written by the same device command)."""
import json, sys
from pathlib import Path

d = Path(sys.argv[1])
ours = json.loads((d / "bench.json").read_text())
torch = [json.loads(l) for l in (d / "pytorch.jsonl").read_text().splitlines() if l.strip().startswith("{")]
ceil = json.loads((d / "ceilings.json").read_text().strip().splitlines()[-1])
pt = {(r["config"], r["mode"]): r for r in torch if "error" not in r}

print("| shape | ours ms/step | ours tok/s | PyTorch fp32 tok/s | PyTorch TF32 tok/s | ours ÷ fp32 | ours ÷ TF32 |")
print("|---|---|---|---|---|---|---|")
for r in ours["train"]:
    f, t = pt.get((r["config"], "fp32")), pt.get((r["config"], "tf32"))
    print(f"| {r['config']} | {r['ms_per_step']:.1f} | {r['train_tokens_per_s']:,.0f} | "
          f"{f['train_tokens_per_s']:,.0f} | {t['train_tokens_per_s']:,.0f} | "
          f"{r['train_tokens_per_s'] / f['train_tokens_per_s']:.2f}× | {r['train_tokens_per_s'] / t['train_tokens_per_s']:.2f}× |")
print()
print("| shape | path | mode | ours tok/s (KV cache) | PyTorch greedy fp32 tok/s | ratio |")
print("|---|---|---|---|---|---|")
for r in ours["sample"]:
    f = pt.get((r["config"], "fp32"))
    print(f"| {r['config']} | {r['path']} | {r.get('mode', 'greedy')} | {r['sample_tokens_per_s']:,.1f} | {f['sample_tokens_per_s']:,.1f} | "
          f"{r['sample_tokens_per_s'] / f['sample_tokens_per_s']:.2f}× |")
print()
print(f"| matmul | path | ms | TFLOP/s | GB/s | of fp32 SGEMM ceiling ({ceil['gemm_fp32_tflops']} TFLOP/s) | of fp32 GEMV ceiling ({ceil.get('gemv_fp32_GBps', 0)} GB/s) |")
print("|---|---|---|---|---|---|---|")
for r in ours["matmul"]:
    print(f"| {r['shape']} | {r['path']} | {r['ms']:.3f} | {r['tflops']:.2f} | {r['gb_per_s']:.1f} | "
          f"{100 * r['tflops'] / ceil['gemm_fp32_tflops']:.1f} % | {100 * r['gb_per_s'] / max(ceil.get('gemv_fp32_GBps', 1), 1):.1f} % |")
