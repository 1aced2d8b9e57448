//! `tinygpt bench`: one JSON document of this engine's speed on the local
//! adapter, with shapes matching `../shared/bench/pytorch_baseline.py`.

use crate::clock::now_ms;
use anyhow::Result;
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::time::Instant;
use tinygpt_core::data::BatchSampler;
use tinygpt_core::sample::{SampleParams, Sampler};
use tinygpt_core::{init_params, ModelConfig, Rng, TrainConfig};
use tinygpt_gpu::engine::generate_rows;
use tinygpt_gpu::gate::{run_gates, FastPaths, GateOptions, BUNDLED_SHAPE};
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::model::{Decoder, DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::matmul::coop::{
    bind_matmul_coop_variant, engine_kernel, CoopKernel, CoopOptions,
};
use tinygpt_gpu::ops::matmul::f16w::{bind_matmul_f16w, packed_words, PackedW};
use tinygpt_gpu::ops::matmul::{bind_matmul, MatmulDesc};
use tinygpt_gpu::{GpuContext, PipelineRegistry};
use tinygpt_protocol::MAX_SAMPLES;

/// `(name, layers, heads, d_model, context, batch)`, as in pytorch_baseline.py.
pub const SHAPES: [(&str, usize, usize, usize, usize, usize); 3] = [
    ("tiny", 4, 4, 128, 64, 32),
    ("small", 4, 4, 256, 128, 32),
    ("nanogpt", 6, 6, 384, 256, 64),
];
pub const VOCAB: usize = 65;

/// Waits until the GPU has finished everything submitted.
fn sync(ctx: &GpuContext) -> Result<()> {
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    Ok(())
}

pub fn config(l: usize, h: usize, c: usize, t: usize) -> ModelConfig {
    ModelConfig {
        vocab_size: VOCAB,
        block_size: t,
        n_layer: l,
        n_head: h,
        d_model: c,
    }
}

/// Training throughput: `warmup` steps, then `steps` timed, one submission
/// each; on f32, or with `fast` (the f16-compute or the tensor-core path).
fn bench_train(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (name, shape): (&str, (usize, usize, usize, usize, usize)),
    (warmup, steps): (usize, usize),
    fast: Option<FastPaths>,
) -> Result<Value> {
    let (l, h, c, t, b) = shape;
    let cfg = config(l, h, c, t);
    let tc = TrainConfig {
        batch_size: b,
        seq_len: t,
        steps: warmup + steps,
        warmup_steps: 0,
        ..TrainConfig::default()
    };
    let mut model = GpuModel::new(
        ctx,
        cfg,
        &init_params(&cfg, 0),
        None,
        tc,
        OptState::default(),
    )?;
    if let Some(fast) = fast {
        model.set_fast_paths(ctx, reg, fast)?;
    }
    let mut rng = Rng::new(1);
    let tokens: Vec<u32> = (0..100_000).map(|_| rng.below(VOCAB) as u32).collect();
    let mut sampler = BatchSampler::new(0);
    let batches: Vec<_> = (0..warmup + steps)
        .map(|_| sampler.next_batch(&tokens, b, t))
        .collect();
    for batch in &batches[..warmup] {
        model.train_step(ctx, reg, batch)?;
    }
    sync(ctx)?;
    let t0 = Instant::now();
    for batch in &batches[warmup..] {
        model.train_step(ctx, reg, batch)?;
    }
    sync(ctx)?;
    let dt = t0.elapsed().as_secs_f64() / steps as f64;
    let loss = pollster::block_on(model.read_loss(ctx))?;
    let params = cfg.num_params();
    let flops_per_token = 6 * params + 12 * l * c * t;
    let path = match fast {
        Some(f) if f.coop_matrix => "coop-matrix",
        Some(_) => "f16-compute",
        None => "f32",
    };
    Ok(json!({
        "config": name, "path": path, "params": params, "batch": b, "block": t,
        "ms_per_step": dt * 1e3, "train_tokens_per_s": (b * t) as f64 / dt,
        "train_tflops_est": (flops_per_token * b * t) as f64 / dt / 1e12,
        "final_loss": loss, "steps": steps,
    }))
}

/// The sampled rows' setting: temperature 0.8, top-k 40, top-p 0.95.
fn sampled() -> SampleParams {
    SampleParams {
        temperature: 0.8,
        top_k: Some(40),
        top_p: Some(0.95),
        seed: 1,
    }
}

/// Sampling with the KV cache, as `tinygpt sample` runs it (picks on the
/// GPU, chunks of tokens per submission), greedy or with [`sampled`]'s
/// setting, `samples` continuations decoded together: `n` tokens each
/// after a one-token prompt, within one context window, timed `timed`
/// times after one untimed run. Tokens/s counts every sample's tokens: the
/// median run's as `sample_tokens_per_s`, every run's in the list beside
/// it (a run of `tiny` is 63 tokens, a few milliseconds: one alone is
/// noise).
fn bench_sample(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    name: &str,
    shape: (usize, usize, usize, usize, usize),
    (n, samples, timed): (usize, usize, usize),
    (fast, params, decoder): (FastPaths, SampleParams, DecoderChoice),
) -> Result<Value> {
    let (l, h, c, t, _) = shape;
    let cfg = config(l, h, c, t);
    let mut model = GpuModel::new(
        ctx,
        cfg,
        &init_params(&cfg, 0),
        None,
        TrainConfig::default(),
        OptState::default(),
    )?;
    model.set_fast_paths(ctx, reg, fast)?;
    let dec = decoder.open(ctx, reg, &mut model, samples)?;
    let dispatches = dec.dispatches_per_token();
    let decoder = dec.layout().name();
    let n = n.min(dec.capacity() - 1);
    let run = |dec: &mut Decoder| {
        let mut samplers = (0..samples)
            .map(|i| Sampler::new(params.for_sample(i)))
            .collect::<Result<Vec<_>, _>>()?;
        let samplers = (!params.is_greedy()).then_some(samplers.as_mut_slice());
        pollster::block_on(generate_rows(ctx, dec, &[0], n, samplers, |_, _| {
            ControlFlow::Continue(())
        }))
    };
    run(dec)?;
    let mut rates = Vec::with_capacity(timed);
    for _ in 0..timed.max(1) {
        let t0 = Instant::now();
        run(dec)?;
        rates.push((n * samples) as f64 / t0.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    let path = match (fast.f16_storage.is_some(), fast.subgroups) {
        (false, false) => "f32",
        (true, false) => "f16-storage",
        (false, true) => "f32+subgroups",
        (true, true) => "f16-storage+subgroups",
    };
    let mode = match params.is_greedy() {
        true => "greedy".to_string(),
        false => format!(
            "top-k {}, top-p {}, T {}",
            params.top_k.unwrap_or(0),
            params.top_p.unwrap_or(1.0),
            params.temperature
        ),
    };
    Ok(json!({
        "config": name,
        "path": path,
        "decoder": decoder,
        "dispatches_per_token": dispatches,
        "mode": mode,
        "samples": samples,
        "tokens": n * samples, "sample_tokens_per_s": median, "sample_tokens_per_s_runs": rates }))
}

/// One matmul shape, timed over `iters` back-to-back dispatches.
fn bench_matmul(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    label: &str,
    desc: MatmulDesc,
    iters: usize,
    path: MatmulPath,
) -> Result<Value> {
    let a = ctx.zeros("bench_a", (desc.m * desc.k) as usize)?;
    let b = ctx.zeros("bench_b", (desc.k * desc.n) as usize)?;
    let c = ctx.zeros("bench_c", (desc.m * desc.n) as usize)?;
    let packed = ctx.zeros("bench_b_f16", packed_words((desc.k * desc.n) as usize))?;
    // With `f16` the weight operand is read as packed halves.
    let k = match path {
        MatmulPath::F16Storage | MatmulPath::F16Compute => {
            let w = PackedW::at(&packed, 0).computing(path == MatmulPath::F16Compute);
            bind_matmul_f16w(ctx, reg, desc, &a, w, None, &c)?
        }
        MatmulPath::Coop(kernel) => {
            let opts = CoopOptions {
                kernel,
                ..Default::default()
            };
            let ks = bind_matmul_coop_variant(ctx, reg, desc, (&a, opts), &b, None, &c)?;
            let mut row = time_kernels(ctx, label, desc, iters, path, &ks)?;
            row["kernel"] = json!(kernel.name());
            row["engine"] = json!(kernel == engine_kernel());
            return Ok(row);
        }
        MatmulPath::F32 => bind_matmul(ctx, reg, desc, &a, &b, None, &c)?,
    };
    time_kernels(ctx, label, desc, iters, path, std::slice::from_ref(&k))
}

/// Times `iters` runs of `ks` (one matmul) in one submission.
fn time_kernels(
    ctx: &GpuContext,
    label: &str,
    desc: MatmulDesc,
    iters: usize,
    path: MatmulPath,
    ks: &[tinygpt_gpu::kernel::BoundKernel],
) -> Result<Value> {
    let f16 = matches!(path, MatmulPath::F16Storage | MatmulPath::F16Compute);
    let dt = time_calls(ctx, ks, iters)?;
    let flops = 2.0 * desc.m as f64 * desc.k as f64 * desc.n as f64;
    let weight_bytes = if f16 { 2.0 } else { 4.0 };
    // (The coop path stages f32 operands as f16 in workgroup memory: it
    // reads 4 bytes an element like the f32 path.)
    let bytes =
        4.0 * (desc.m * desc.k + desc.m * desc.n) as f64 + weight_bytes * (desc.k * desc.n) as f64;
    Ok(json!({
        "shape": label, "m": desc.m, "k": desc.k, "n": desc.n, "path": path.name(),
        "ms": dt * 1e3, "tflops": flops / dt / 1e12, "gb_per_s": bytes / dt / 1e9,
    }))
}

/// Seconds a call of `ks` (recorded in order) takes: `iters` calls in one
/// submission after one untimed, wall time to the end over `iters`.
pub fn time_calls(
    ctx: &GpuContext,
    ks: &[tinygpt_gpu::kernel::BoundKernel],
    iters: usize,
) -> Result<f64> {
    submit(ctx, "warmup", &ks.iter().collect::<Vec<_>>());
    sync(ctx)?;
    let kernels: Vec<_> = (0..iters).flat_map(|_| ks.iter()).collect();
    let t0 = Instant::now();
    submit(ctx, "bench", &kernels);
    sync(ctx)?;
    Ok(t0.elapsed().as_secs_f64() / iters as f64)
}

/// Whether a run covers the shape `name`: the one asked for, else every
/// shape (`tiny` alone with `quick`).
pub fn wanted(name: &str, quick: bool, only: Option<&str>) -> bool {
    match only {
        Some(s) => name == s,
        None => !quick || name == "tiny",
    }
}

/// The decoder `bench` samples and profiles on: a layout (else the
/// engine's), and the persistent layouts' pick apart from their kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct DecoderChoice {
    pub kernels: Option<DecoderKernels>,
    pub pick_apart: bool,
}

impl DecoderChoice {
    /// `model`'s decoder of `samples` samples, laid out as chosen.
    pub fn open<'m>(
        self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        model: &'m mut GpuModel,
        samples: usize,
    ) -> Result<&'m mut Decoder> {
        if let Some(kernels) = self.kernels {
            model.set_decoder_kernels(kernels);
        }
        let dec = model.decoder_for(ctx, reg, samples)?;
        dec.set_pick_in_kernel(!self.pick_apart);
        Ok(dec)
    }
}

pub fn run(
    ctx: &GpuContext,
    quick: bool,
    (only, decoder): (Option<&str>, DecoderChoice),
) -> Result<Value> {
    let mut reg = PipelineRegistry::default();
    // The fast paths are benchmarked only where their precision gate
    // passes here; their speed is what the bench measures, so the speed
    // gate does not decide (its line is still printed, measured).
    let opts = GateOptions {
        fault: None,
        vocab: VOCAB as u32,
        now_ms,
        measure_speed: false,
        speed_shape: BUNDLED_SHAPE,
    };
    let (gates, fast) = pollster::block_on(run_gates(ctx, &mut reg, opts));
    for line in gates.iter().flat_map(|g| &g.lines) {
        eprintln!("{line}");
    }
    // Each path alone: sampling on f16 storage, training on f16 compute.
    let f16 = fast.f16_storage.map(|s| FastPaths {
        f16_storage: Some(s),
        ..Default::default()
    });
    let compute = fast.f16_compute.map(|c| FastPaths {
        f16_compute: Some(c),
        ..Default::default()
    });
    let coop = fast.coop_matrix.then(|| FastPaths {
        coop_matrix: true,
        coop_attention: tinygpt_gpu::ops::attention::engine_attention(),
        ..Default::default()
    });
    eprintln!("bench: the launch floor");
    let floor = crate::floor::bench_floor(ctx, &mut reg)?;
    let trains = [compute, coop];
    // Sampling on f32 and f16 storage, each also with subgroup sums.
    let mut decoders = vec![FastPaths::default()];
    decoders.extend(f16);
    if fast.subgroups {
        let sg = |f: &FastPaths| FastPaths {
            subgroups: true,
            ..*f
        };
        decoders.extend(decoders.iter().map(sg).collect::<Vec<_>>());
    }
    let wanted = (quick, only, decoder);
    let (train, sample) = bench_models(ctx, &mut reg, wanted, (&decoders, &trains))?;
    // A run of one shape is about that shape (`matmuls`: no model shape
    // is wanted, only these).
    let matmul = match only {
        Some(s) if s != "matmuls" => Vec::new(),
        _ => bench_matmuls(ctx, &mut reg, quick, (f16.is_some(), compute.is_some()))?,
    };
    Ok(json!({
        "adapter": ctx.adapter_desc(),
        "gates": gates,
        "floor": floor,
        "train": train,
        "sample": sample,
        "matmul": matmul,
    }))
}

/// Training and sampling of every wanted shape; sampling on each of
/// `decoders` (f32 first) and training on f32 and each of `trains` given.
fn bench_models(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (quick, only, decoder): (bool, Option<&str>, DecoderChoice),
    (decoders, trains): (&[FastPaths], &[Option<FastPaths>]),
) -> Result<(Vec<Value>, Vec<Value>)> {
    let (warmup, steps, tokens, timed) = if quick { (1, 2, 8, 1) } else { (5, 20, 200, 7) };
    let (mut train, mut sample) = (Vec::new(), Vec::new());
    for (name, l, h, c, t, b) in SHAPES {
        if !wanted(name, quick, only) {
            continue;
        }
        let shape = (l, h, c, t, b);
        eprintln!("bench: training {name}");
        let (named, counts) = ((name, shape), (warmup, steps));
        train.push(bench_train(ctx, reg, named, counts, None)?);
        for fast in trains.iter().filter(|f| f.is_some()) {
            train.push(bench_train(ctx, reg, named, counts, *fast)?);
        }
        eprintln!("bench: sampling {name}");
        let runs = [
            (SampleParams::greedy(), 1),
            (sampled(), 1),
            (sampled(), MAX_SAMPLES),
        ];
        for (params, samples) in runs {
            let n = (tokens, samples, timed);
            for &fast in decoders {
                let how = (fast, params, decoder);
                sample.push(bench_sample(ctx, reg, name, shape, n, how)?);
            }
        }
    }
    Ok((train, sample))
}

/// Which kernel a matmul row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatmulPath {
    F32,
    /// The weight operand read as packed halves.
    F16Storage,
    /// Both operands as f16 in workgroup memory, f32 sums (shader-f16).
    F16Compute,
    /// Cooperative matrices (tensor cores) on one of the kernels: f16
    /// operands, f32 sums (the staging of both operands included).
    Coop(CoopKernel),
}

impl MatmulPath {
    fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16Storage => "f16-storage",
            Self::F16Compute => "f16-compute",
            Self::Coop(_) => "coop-matrix",
        }
    }
}

/// The matmuls of the nanogpt shape, a square one and a GEMV, f32, f16
/// storage (but the square) and f16 compute (neither the square nor the
/// GEMV) when their gates passed, and on cooperative matrices (but the
/// GEMV; each kernel, the row `engine` the one training binds) where the
/// device has them.
fn bench_matmuls(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    quick: bool,
    (f16, compute): (bool, bool),
) -> Result<Vec<Value>> {
    let big = if quick { 256 } else { 4096 };
    let square = MatmulDesc {
        m: big,
        k: big,
        n: big,
        ..Default::default()
    };
    let shapes = [
        (
            "nanogpt fc (B·T=16384, 384→1536)",
            MatmulDesc::linear(16384, 384, 1536),
        ),
        (
            "nanogpt qkv (16384, 384→1152)",
            MatmulDesc::linear(16384, 384, 1152),
        ),
        (
            "nanogpt proj (16384, 384→384)",
            MatmulDesc::linear(16384, 384, 384),
        ),
        ("square", square),
        ("GEMV M=1 (4096→4096)", MatmulDesc::linear(1, big, big)),
    ];
    let iters = if quick { 2 } else { 20 };
    let mut out = Vec::new();
    for (label, mut desc) in shapes {
        if quick {
            desc.m = desc.m.min(256);
        }
        desc.bias = false;
        eprintln!("bench: matmul {label}");
        let coop = ctx.coop_matrix && desc.m > 1;
        let paths = [
            (true, MatmulPath::F32),
            (f16 && label != "square", MatmulPath::F16Storage),
            (
                compute && label != "square" && desc.m > 1,
                MatmulPath::F16Compute,
            ),
        ];
        let coops = CoopKernel::ALL.map(|k| (coop, MatmulPath::Coop(k)));
        for (_, path) in paths.into_iter().chain(coops).filter(|(wanted, _)| *wanted) {
            out.push(bench_matmul(ctx, reg, label, desc, iters, path)?);
        }
    }
    Ok(out)
}
