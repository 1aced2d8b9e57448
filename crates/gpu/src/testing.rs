//! The one way native tests get a GPU: a single shared device per test binary
//! (lavapipe in CI). With `TINYGPT_REQUIRE_GPU=1` — set by `.ci/run` — a
//! missing adapter fails the test instead of skipping it.
//! The tests' pipelines are built as the engine's are (without wgpu's
//! shader checks natively: `ShaderChecks`), or as `TINYGPT_SHADER_CHECKS`
//! says (`ShaderChecks::parse`'s words: `full` for all of them).

use crate::{GpuContext, PipelineRegistry, ShaderChecks};
use std::sync::{Mutex, OnceLock};

/// The shared device and its pipeline registry.
pub struct TestGpu {
    pub ctx: GpuContext,
    pub registry: Mutex<PipelineRegistry>,
}

static GPU: OnceLock<Option<TestGpu>> = OnceLock::new();

/// `true` when the environment demands a real adapter.
pub fn gpu_required() -> bool {
    std::env::var("TINYGPT_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The shared test device, or `None` (with a note on stderr) when there is
/// no adapter and none is required.
///
/// # Panics
/// When `TINYGPT_REQUIRE_GPU=1` and no adapter could be opened.
#[track_caller]
pub fn test_gpu() -> Option<&'static TestGpu> {
    let gpu = GPU.get_or_init(|| match pollster::block_on(GpuContext::new()) {
        Ok(mut ctx) => {
            ctx.shader_checks = checks_from_env();
            if coop_unadvertised() {
                ctx.coop_attention =
                    crate::context::coop_attention_runs(&ctx.info, ctx.features, &ctx.limits, true);
            }
            eprintln!(
                "test GPU: {} ({:?}, {}; shader checks {:?}; tensor-core attention {}; \
                 workgroup memory {} bytes)",
                ctx.info.name,
                ctx.info.device_type,
                ctx.info.backend,
                ctx.shader_checks,
                ctx.coop_attention,
                ctx.limits.max_compute_workgroup_storage_size
            );
            Some(TestGpu {
                ctx,
                registry: Mutex::new(PipelineRegistry::default()),
            })
        }
        Err(e) if gpu_required() => panic!("TINYGPT_REQUIRE_GPU=1 but no GPU could be opened: {e}"),
        Err(e) => {
            eprintln!("skipping GPU test: {e} (set TINYGPT_REQUIRE_GPU=1 to make this a failure)");
            None
        }
    });
    if gpu.is_none() && gpu_required() {
        panic!("TINYGPT_REQUIRE_GPU=1 but no GPU could be opened");
    }
    gpu.as_ref()
}

/// `TINYGPT_COOP_UNADVERTISED=1`: the tests run the tensor-core attention
/// on a device with cooperative matrices that does not list 16×16×16 f16 →
/// f32 among them. Mesa's lavapipe (26.x) lists only 8×8×8 but lowers
/// every size to its own vector code, so CI's CPU runs these kernels' logic
/// (`.ci/coop-lavapipe`); the engine never uses a size the device does not
/// list.
pub fn coop_unadvertised() -> bool {
    std::env::var("TINYGPT_COOP_UNADVERTISED").is_ok_and(|v| v == "1")
}

/// The checks `TINYGPT_SHADER_CHECKS` names (the engine's when unset).
///
/// # Panics
/// On a value `ShaderChecks::parse` refuses.
pub fn checks_from_env() -> ShaderChecks {
    match std::env::var("TINYGPT_SHADER_CHECKS") {
        Ok(v) => ShaderChecks::parse(&v).unwrap_or_else(|e| panic!("TINYGPT_SHADER_CHECKS: {e}")),
        Err(_) => ShaderChecks::engine_default(),
    }
}

/// A device of its own (for tests that need one besides the shared one),
/// with `TINYGPT_SHADER_CHECKS`'s checks.
///
/// # Panics
/// When no adapter can be opened.
pub fn open_context() -> GpuContext {
    let mut ctx = pollster::block_on(GpuContext::new()).expect("a GPU device");
    ctx.shader_checks = checks_from_env();
    ctx
}

/// Gets the shared test GPU or returns from the test (only allowed when
/// `TINYGPT_REQUIRE_GPU` is unset).
#[macro_export]
macro_rules! gpu_or_skip {
    () => {
        match $crate::testing::test_gpu() {
            Some(g) => g,
            None => return,
        }
    };
}

/// Says that a test (or part of one) did not run on this adapter and why:
/// `{test}: DID NOT RUN on this adapter: {why}`, written to the process's
/// stderr itself, past the test harness's capture, so that the log of a
/// passing run (CI's `cargo test`) shows it too.
pub fn did_not_run(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: DID NOT RUN on this adapter: {why}"
    );
}

/// `n` values uniform in [-1, 1) from `rng`: the test operand of every
/// kernel test (`n` in whatever integer type the shape uses).
pub fn random(rng: &mut tinygpt_core::Rng, n: impl TryInto<usize>) -> Vec<f32> {
    random_in(rng, n, -1.0, 1.0)
}

/// Two KV caches of `desc`'s shape with the same random contents (a
/// kernel and the kernels it replaces, each appending to its own).
pub fn twin_caches(
    ctx: &GpuContext,
    desc: crate::ops::attention::DecodeDesc,
    rng: &mut tinygpt_core::Rng,
) -> [crate::ops::attention::KvCache; 2] {
    let (k, v) = (random(rng, desc.cache_len()), random(rng, desc.cache_len()));
    [0, 1].map(|_| {
        let cache = crate::ops::attention::KvCache::new(ctx, desc).expect("a test cache");
        ctx.queue
            .write_buffer(&cache.k, 0, bytemuck::cast_slice(&k));
        ctx.queue
            .write_buffer(&cache.v, 0, bytemuck::cast_slice(&v));
        cache
    })
}

/// `n` values uniform in [lo, hi) from `rng`.
pub fn random_in(
    rng: &mut tinygpt_core::Rng,
    n: impl TryInto<usize>,
    lo: f32,
    hi: f32,
) -> Vec<f32> {
    let n = n
        .try_into()
        .unwrap_or_else(|_| panic!("a test size that fits in usize"));
    (0..n).map(|_| rng.uniform(lo, hi)).collect()
}

/// Every `(M, K, N)` of `shapes` in all four layouts, each with the seed
/// it runs with (`seed0 + 1` on), bias on every second and accumulation
/// on every third: the cases a matmul kernel's test runs.
pub fn every_layout(
    shapes: &[(u32, u32, u32)],
    seed0: u64,
) -> Vec<(crate::ops::matmul::MatmulDesc, u64)> {
    let mut seed = seed0;
    let mut out = Vec::new();
    for &(m, k, n) in shapes {
        for (trans_a, trans_b) in [(false, false), (false, true), (true, false), (true, true)] {
            seed += 1;
            let desc = crate::ops::matmul::MatmulDesc {
                m,
                k,
                n,
                trans_a,
                trans_b,
                bias: seed.is_multiple_of(2),
                accumulate: seed.is_multiple_of(3),
            };
            out.push((desc, seed));
        }
    }
    out
}

/// A small model trained `steps` steps on a new GPU device (so its
/// attention is no longer uniform), and a CPU session of the same weights:
/// for tests that hold the two backends together. `None` where
/// [`test_gpu`] finds no adapter (and it fails instead when one is
/// required).
pub fn trained_pair(
    block_size: usize,
    steps: usize,
) -> Option<(crate::engine::Session, crate::engine::Session)> {
    use crate::engine::{Gpu, Session};
    use tinygpt_core::data::Dataset;
    use tinygpt_core::{ModelConfig, TrainConfig};
    test_gpu()?;
    let gpu = Gpu::new(open_context());
    let corpus =
        "to be or not to be, that is the question; whether 'tis nobler in the mind\n".repeat(20);
    let data = Dataset::from_bytes(corpus.as_bytes(), 0.1, 16).expect("a dataset");
    let config = ModelConfig {
        vocab_size: data.vocab.len(),
        block_size,
        n_layer: 2,
        n_head: 2,
        d_model: 16,
    };
    let train = TrainConfig {
        batch_size: 2,
        seq_len: 16,
        steps,
        warmup_steps: 2,
        lr: 1e-2,
        eval_interval: 0,
        ..TrainConfig::default()
    };
    let mut g = Session::new(config, train, data, "gpu".into(), Some(gpu)).expect("a GPU session");
    for _ in 0..steps {
        pollster::block_on(g.train_steps(1)).expect("a step");
    }
    let ckpt = pollster::block_on(g.checkpoint()).expect("a checkpoint");
    let c = Session::from_checkpoint(ckpt, "cpu".into(), None).expect("a CPU session");
    Some((g, c))
}

/// Whether the test device compiles f16 arithmetic (`SHADER_F16`); if not,
/// says that `test` did not run and why.
pub fn has_shader_f16(gpu: &TestGpu, test: &str) -> bool {
    let has = gpu.ctx.features.contains(wgpu::Features::SHADER_F16);
    if !has {
        did_not_run(
            test,
            "the adapter has no SHADER_F16 (f16 copies are f16 arrays)",
        );
    }
    has
}

/// Checks the f16 copy a producer wrote beside `source` (`rows × cols`;
/// `StagedRows::for_producer`) against `source` as the tensor-core path
/// stages it as op(A) (`bind_stage_rows`, times the copy's scale): every
/// half the same — the padding's zeros too — and some of them not zero.
///
/// # Panics
/// Where a half differs, or the copy is all zeros.
pub fn assert_copy_is_staged(
    gpu: &TestGpu,
    copy: &crate::ops::matmul::coop_stage::StagedRows,
    source: crate::ops::View<'_>,
    shape: (u32, u32),
    what: &str,
) {
    use crate::ops::matmul::coop_stage::bind_stage_rows;
    let ctx = &gpu.ctx;
    let (want, k) = {
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        bind_stage_rows(ctx, &mut reg, source, shape, copy.scale()).expect("staging binds")
    };
    crate::kernel::submit(ctx, "stage_rows", &[&k]);
    let size = copy.buffer().size();
    assert_eq!(size, want.buffer().size(), "{what}: the copy's size");
    let read = |b| pollster::block_on(ctx.read_bytes(b, size)).expect("read");
    let (got, want) = (read(copy.buffer()), read(want.buffer()));
    let halves = |v: &[u8]| v.chunks_exact(2).map(|h| [h[0], h[1]]).collect::<Vec<_>>();
    let (got, want) = (halves(&got), halves(&want));
    let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(
        differ,
        0,
        "{what}: {differ} of {} halves differ from the staged copy",
        got.len()
    );
    assert!(
        got.iter().any(|h| *h != [0, 0]),
        "{what}: the copy is all zeros"
    );
}
