//! Greedy decoding with the picks on the GPU (`engine::generate_greedy`,
//! chunks of tokens per submission) against decoding one token at a time
//! with the logits read back for the CPU sampler — bit-identical, f32 and
//! f16-storage, across context-window restarts and prompts longer than the
//! window — and against the CPU reference's text, with the LayerNorms
//! folded into the GEMVs (GPUs) and as dispatches of their own (CPU
//! implementations), and with a head's LayerNorm, QKV columns and
//! attention in one kernel, which all give the same logits bit for bit; Stop
//! mid-chunk; non-finite logits refused as the CPU sampler refuses them;
//! and the dispatches of one decoded token (one fewer when it is chained
//! after another: the pick writes the next input row).

use std::ops::ControlFlow;
use tinygpt_core::numerics::assert_close;
use tinygpt_core::sample::{SampleError, SampleParams, Sampler};
use tinygpt_core::{Gpt, ModelConfig, ParamKind, ParamLayout, TrainConfig};
use tinygpt_gpu::engine::{
    generate_greedy, generate_picked, generate_rows, EngineError, GREEDY_CHUNK,
};
use tinygpt_gpu::gate::{F16Storage, FastPaths};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::model::{Decoder, DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::argmax::head_pick_offered;
use tinygpt_gpu::ops::persistent::{persistent_pick_offered, persistent_wide_offered};
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::PipelineRegistry;

fn config() -> ModelConfig {
    ModelConfig {
        vocab_size: 11,
        block_size: 12,
        n_layer: 2,
        n_head: 2,
        // Heads of 12: a multiple of 4, as the `Persistent` kernel needs.
        d_model: 24,
    }
}

/// Weights larger than the init, so the logits are decisive.
fn params(cfg: &ModelConfig) -> Vec<f32> {
    let mut p = Gpt::new(*cfg, 9).unwrap().params;
    p.iter_mut().for_each(|x| *x *= 8.0);
    p
}

fn f16() -> FastPaths {
    FastPaths {
        f16_storage: Some(F16Storage {
            pack_on_gpu: false,
            fault: None,
            training: true,
        }),
        ..Default::default()
    }
}

/// Every layout of the decoder's kernels, whatever the test adapter is.
const KERNELS: [DecoderKernels; 7] = DecoderKernels::ALL;

fn model(gpu: &TestGpu, reg: &mut PipelineRegistry, p: &[f32], fast: FastPaths) -> GpuModel {
    model_with(gpu, reg, p, fast, DecoderKernels::for_device(&gpu.ctx))
}

fn model_with(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    p: &[f32],
    fast: FastPaths,
    kernels: DecoderKernels,
) -> GpuModel {
    let cfg = config();
    let tc = TrainConfig::default();
    let mut m = GpuModel::new(&gpu.ctx, cfg, p, None, tc, OptState::default()).unwrap();
    m.set_fast_paths(&gpu.ctx, reg, fast).unwrap();
    m.set_decoder_kernels(kernels);
    pollster::block_on(m.prepare_inference(&gpu.ctx)).unwrap();
    m
}

/// The path greedy sampling took before the picks moved to the GPU: one
/// submission and one read-back of V logits per token, the CPU sampler
/// choosing, the cache restarting from the last half window when full.
fn one_at_a_time(
    gpu: &TestGpu,
    dec: &mut Decoder,
    prompt: &[u32],
    n: usize,
) -> Result<Vec<u32>, SampleError> {
    let ctx = &gpu.ctx;
    let mut sampler = Sampler::new(SampleParams::greedy()).unwrap();
    let cap = dec.capacity();
    let mut context = if prompt.is_empty() {
        vec![0]
    } else {
        prompt.to_vec()
    };
    dec.reset();
    let window = context[context.len().saturating_sub(cap)..].to_vec();
    for &t in &window[..window.len() - 1] {
        dec.feed(ctx, t).unwrap();
    }
    let mut logits = pollster::block_on(dec.push(ctx, window[window.len() - 1])).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let next = sampler.sample(&logits)?;
        out.push(next);
        context.push(next);
        if out.len() == n {
            break;
        }
        if dec.len == cap {
            dec.reset();
            for &t in &context[context.len() - cap / 2..context.len() - 1] {
                dec.feed(ctx, t).unwrap();
            }
        }
        logits = pollster::block_on(dec.push(ctx, next)).unwrap();
    }
    Ok(out)
}

fn greedy(
    gpu: &TestGpu,
    dec: &mut Decoder,
    prompt: &[u32],
    n: usize,
) -> Result<Vec<u32>, EngineError> {
    pollster::block_on(generate_greedy(&gpu.ctx, dec, prompt, n, |_| {
        ControlFlow::Continue(())
    }))
}

#[test]
fn gpu_picks_equal_the_one_token_at_a_time_path_bit_for_bit() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    let long: Vec<u32> = (0..cfg.block_size as u32 + 5).map(|i| i * 7 % 11).collect();
    for (fast, ln) in [FastPaths::default(), f16()]
        .into_iter()
        .flat_map(|f| KERNELS.map(|ln| (f, ln)))
    {
        let mut m = model_with(gpu, &mut reg, &p, fast, ln);
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        // Several window restarts (and chunks cut by them), a prompt longer
        // than the window, an empty prompt, past one full chunk.
        let cases: [(&[u32], usize); 3] = [
            (&[1, 4, 2], 4 * cfg.block_size),
            (&long, 10),
            (&[], GREEDY_CHUNK + 3),
        ];
        for (prompt, n) in cases {
            let want = one_at_a_time(gpu, dec, prompt, n).unwrap();
            let got = greedy(gpu, dec, prompt, n).unwrap();
            assert_eq!(got, want, "{fast:?}, {ln:?}, prompt {prompt:?}");
        }
    }
}

/// The LayerNorm folded into the GEMV or on its own: the same bits; so are
/// the `Fused` layout's LayerNorm, QKV and attention in one kernel a head
/// (f32 weights). The column layout and the `Stack` layout's projection
/// (a share a head, then the heads) sum in other orders: the same logits
/// to f32 rounding.
#[test]
fn the_layernorm_folded_or_on_its_own_gives_the_same_logits_bit_for_bit() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let p = params(&config());
    for fast in [FastPaths::default(), f16()] {
        let logits = KERNELS.map(|ln| {
            let mut m = model_with(gpu, &mut reg, &p, fast, ln);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            dec.reset();
            let steps: Vec<Vec<f32>> = [3u32, 1, 4, 1, 5]
                .iter()
                .map(|&t| pollster::block_on(dec.push(&gpu.ctx, t)).unwrap())
                .collect();
            (ln, steps.concat())
        });
        let of = |k: DecoderKernels| &logits.iter().find(|(ln, _)| *ln == k).unwrap().1;
        let bits = |l: &[f32]| -> Vec<u32> { l.iter().map(|v| v.to_bits()).collect() };
        let prologue = of(DecoderKernels::Prologue);
        for same in [DecoderKernels::Fused, DecoderKernels::Separate] {
            assert_eq!(bits(of(same)), bits(prologue), "{fast:?}: {same:?}");
        }
        let others = [
            DecoderKernels::Columns,
            DecoderKernels::Stack,
            DecoderKernels::Persistent,
            DecoderKernels::PersistentWide,
        ];
        for close in others {
            let what = format!("{fast:?}: {close:?} vs prologue");
            // The persistent kernel's linears sum a column in up to 32
            // lanes' partials (more orders apart; measured 1.5e-5 at most
            // on lavapipe): three times the others' tolerance.
            let tol = if close.persistent_width().is_some() {
                3e-5
            } else {
                1e-5
            };
            assert_close(&what, of(close), prologue, tol, tol);
            assert_ne!(bits(of(close)), bits(prologue), "{what}: another order");
        }
        assert!(prologue.iter().any(|&v| v != 0.0), "logits were computed");
    }
}

#[test]
fn gpu_picks_give_the_cpu_references_text() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    let mut cpu = Gpt::new(cfg, 9).unwrap();
    cpu.params.clone_from(&p);
    let prompt = [3u32, 1, 4];
    // Within the window: the CPU recomputes the last block_size tokens, the
    // cache restarts from half a window, so past it the two differ by design.
    let n = cfg.block_size - prompt.len();
    let want = cpu
        .generate(&prompt, n, &SampleParams::greedy(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    for fast in [FastPaths::default(), f16()] {
        for ln in KERNELS {
            let mut m = model_with(gpu, &mut reg, &p, fast, ln);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            assert_eq!(
                greedy(gpu, dec, &prompt, n).unwrap(),
                want,
                "{fast:?}, {ln:?}"
            );
        }
    }
}

/// The `Fused` layout's head with the pick in one kernel (greedy and
/// seeded) against the head GEMV and the pick on their own (`Separate`):
/// the same tokens from the same logits, f32 and f16 storage, across a
/// window restart.
#[test]
fn the_head_and_pick_in_one_kernel_give_the_separate_kernels_tokens() {
    let gpu = gpu_or_skip!();
    if !head_pick_offered(&gpu.ctx) {
        let why = "the device binds fewer storage buffers than the fused head";
        return tinygpt_gpu::testing::did_not_run("fused head and pick", why);
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    let (prompt, n) = ([3u32, 1, 4], 2 * cfg.block_size);
    for fast in [FastPaths::default(), f16()] {
        for rule in [SampleParams::greedy(), sampling(11)] {
            let layouts = [DecoderKernels::Fused, DecoderKernels::Separate];
            let texts = layouts.map(|ln| {
                let mut m = model_with(gpu, &mut reg, &p, fast, ln);
                let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
                let mut s = Sampler::new(rule).unwrap();
                let sampler = (rule.temperature > 0.0).then_some(&mut s);
                let go = |_| ControlFlow::Continue(());
                pollster::block_on(generate_picked(&gpu.ctx, dec, &prompt, n, sampler, go)).unwrap()
            });
            assert_eq!(texts[0], texts[1], "{fast:?}, {rule:?}");
            assert_eq!(texts[0].len(), n);
        }
    }
}

#[test]
fn a_stop_mid_chunk_ends_generation_and_the_next_one_starts_clean() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let p = params(&config());
    let mut m = model(gpu, &mut reg, &p, FastPaths::default());
    let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
    let want = greedy(gpu, dec, &[2, 5], 30).unwrap();
    let mut seen = Vec::new();
    let got = pollster::block_on(generate_greedy(&gpu.ctx, dec, &[2, 5], 30, |t| {
        seen.push(t);
        // The 6th token sits inside the third chunk (1 + 2 + 4 tokens).
        if seen.len() == 6 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }))
    .unwrap();
    assert_eq!(got, want[..6]);
    assert_eq!(seen, got);
    // Chunks still in flight do not disturb the next generation.
    assert_eq!(greedy(gpu, dec, &[2, 5], 30).unwrap(), want);
}

#[test]
fn non_finite_logits_are_refused_as_the_cpu_sampler_refuses_them() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let mut p = params(&cfg);
    // An infinite weight in token 5's row of the tied head: logit 5 is ±inf
    // (the prompt never embeds token 5).
    let tok = ParamLayout::new(&cfg).get(ParamKind::TokEmb).offset;
    p[tok + 5 * cfg.d_model + 3] = f32::INFINITY;
    let mut m = model(gpu, &mut reg, &p, FastPaths::default());
    let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
    let want = one_at_a_time(gpu, dec, &[1, 2], 4).unwrap_err();
    let got = greedy(gpu, dec, &[1, 2], 4).unwrap_err();
    match (got, want) {
        (
            EngineError::Sample(SampleError::NonFiniteLogit { index, value }),
            SampleError::NonFiniteLogit { index: i, value: v },
        ) => {
            assert_eq!((index, value.to_bits()), (i, v.to_bits()));
            assert_eq!(index, 5);
        }
        (got, want) => panic!("{got:?} vs {want:?}"),
    }
}

#[test]
fn a_decoded_token_is_four_dispatches_per_layer_and_two_more() {
    let gpu = gpu_or_skip!();
    if !gpu.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!(
            "DID NOT RUN: no timestamp queries on this adapter (the profiled step needs them)"
        );
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    for fast in [FastPaths::default(), f16()] {
        let mut m = model_with(gpu, &mut reg, &p, fast, DecoderKernels::Fused);
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        dec.reset();
        let times = pollster::block_on(dec.profile_step(&gpu.ctx, 3)).unwrap();
        let keys: Vec<&str> = times.iter().map(|t| t.key).collect();
        // Embedding; per layer LayerNorm + QKV + attention (K/V appended)
        // in one kernel a head, projection (+ residual), fc (LayerNorm,
        // GELU), fc_proj (+ residual); the final LayerNorm, the head and
        // the pick in one kernel — or, where the device binds fewer storage
        // buffers than that kernel, the head GEMV and the pick.
        let (head, last) = match head_pick_offered(&gpu.ctx) {
            true => (1, "head_greedy_pick"),
            false => (2, "greedy_pick"),
        };
        assert_eq!(keys.len(), 4 * cfg.n_layer + 1 + head, "{keys:?}");
        assert_eq!(keys.last(), Some(&last));
        let fused = keys
            .iter()
            .filter(|k| k.starts_with("attention_decode_qkv"));
        assert_eq!(fused.count(), cfg.n_layer, "{keys:?}");
        // A step chained after another: no embedding (the pick before it
        // wrote its input row).
        assert_eq!(dec.dispatches_per_token(), 4 * cfg.n_layer + head);
        // With the LayerNorms on their own: two more per layer, one more
        // before the head.
        for kernels in [DecoderKernels::Separate, DecoderKernels::Columns] {
            m.set_decoder_kernels(kernels);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            dec.reset();
            let times = pollster::block_on(dec.profile_step(&gpu.ctx, 3)).unwrap();
            let keys: Vec<&str> = times.iter().map(|t| t.key).collect();
            assert_eq!(keys.len(), 7 * cfg.n_layer + 4, "{keys:?}");
            assert_eq!(dec.dispatches_per_token(), 7 * cfg.n_layer + 3);
            let ln = keys.iter().filter(|k| k.starts_with("layernorm")).count();
            assert_eq!(ln, 2 * cfg.n_layer + 1, "{keys:?}");
            // Four GEMVs per layer and the head, in the layout asked for.
            let cols = keys.iter().filter(|k| k.ends_with("_cols")).count();
            let want = if kernels == DecoderKernels::Columns {
                4 * cfg.n_layer + 1
            } else {
                0
            };
            assert_eq!(cols, want, "{kernels:?}: {keys:?}");
            let serial = keys
                .iter()
                .filter(|k| **k == "attention_decode_serial")
                .count();
            let want = if kernels == DecoderKernels::Columns {
                cfg.n_layer
            } else {
                0
            };
            assert_eq!(serial, want, "{kernels:?}: {keys:?}");
        }
        // A GPU's layout: the LayerNorms in the GEMVs' prologues, the
        // attention, the head GEMV and the pick on their own.
        m.set_decoder_kernels(DecoderKernels::Prologue);
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        dec.reset();
        let times = pollster::block_on(dec.profile_step(&gpu.ctx, 3)).unwrap();
        let keys: Vec<&str> = times.iter().map(|t| t.key).collect();
        assert_eq!(keys.len(), 5 * cfg.n_layer + 3, "{keys:?}");
        assert_eq!(dec.dispatches_per_token(), 5 * cfg.n_layer + 2);
        let ln = keys.iter().filter(|k| k.starts_with("layernorm")).count();
        assert_eq!(ln, 0, "{keys:?}");
        assert_eq!(keys.last(), Some(&"greedy_pick"), "{keys:?}");
        // The attention's projection in the attention kernel: one fewer a
        // layer.
        m.set_decoder_kernels(DecoderKernels::Stack);
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        dec.reset();
        let times = pollster::block_on(dec.profile_step(&gpu.ctx, 3)).unwrap();
        let keys: Vec<&str> = times.iter().map(|t| t.key).collect();
        assert_eq!(keys.len(), 4 * cfg.n_layer + 3, "{keys:?}");
        assert_eq!(dec.dispatches_per_token(), 4 * cfg.n_layer + 2);
        let proj = keys
            .iter()
            .filter(|k| k.starts_with("attention_decode_proj"));
        assert_eq!(proj.count(), cfg.n_layer, "{keys:?}");
        assert_eq!(keys.last(), Some(&"greedy_pick"), "{keys:?}");
        // The whole token in one kernel, then the pick, at either width.
        for kernels in [DecoderKernels::Persistent, DecoderKernels::PersistentWide] {
            let wide = kernels == DecoderKernels::PersistentWide;
            if wide && !persistent_wide_offered(&gpu.ctx.limits) {
                eprintln!("the wide persistent kernel did not run: this adapter offers {} invocations, {} bytes of workgroup memory", gpu.ctx.limits.max_compute_invocations_per_workgroup, gpu.ctx.limits.max_compute_workgroup_storage_size);
                continue;
            }
            m.set_decoder_kernels(kernels);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            assert_eq!(dec.layout(), kernels);
            dec.reset();
            // The pick inside the kernel where the device offers it: one
            // dispatch a token; else its own.
            let width = kernels.persistent_width().unwrap();
            let inside = persistent_pick_offered(&gpu.ctx.limits, width);
            let times = pollster::block_on(dec.profile_step(&gpu.ctx, 3)).unwrap();
            let keys: Vec<&str> = times.iter().map(|t| t.key).collect();
            assert_eq!(keys.len(), 3 - inside as usize, "{keys:?}");
            assert_eq!(
                keys[1].starts_with("decode_persistent_wide"),
                wide,
                "{keys:?}"
            );
            assert!(keys[1].starts_with("decode_persistent"), "{keys:?}");
            assert_eq!(keys[1].contains("_greedy"), inside, "{keys:?}");
            assert_eq!(dec.dispatches_per_token(), 2 - inside as usize);
        }
    }
}

/// `Decoder::profile_chain` (what `tinygpt bench --profile` times) runs the
/// steps as greedy decoding runs them: the pick after its chain is the one
/// greedy decoding makes there, on every layout.
#[test]
fn a_timed_chain_decodes_what_greedy_decoding_decodes() {
    let gpu = gpu_or_skip!();
    if !gpu.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        tinygpt_gpu::testing::did_not_run("timed chain", "no timestamp queries");
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    let chained = cfg.block_size - 3;
    for ln in KERNELS {
        let mut m = model_with(gpu, &mut reg, &p, FastPaths::default(), ln);
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        let want = greedy(gpu, dec, &[1], chained + 2).unwrap();
        dec.reset();
        let us = pollster::block_on(dec.profile_chain(&gpu.ctx, 1, chained)).unwrap();
        assert!(us.is_finite() && us > 0.0, "{ln:?}: {us} µs");
        assert_eq!(dec.len, 1 + chained);
        let next = dec.submit_greedy(&gpu.ctx, &[], 1).unwrap();
        let next = pollster::block_on(next.finish(&gpu.ctx)).unwrap();
        assert_eq!(next[0].token, want[chained + 1], "{ln:?}");
    }
}

/// Seeded sampling that keeps every token in play (V = 11): three samples
/// write three different texts.
fn sampling(seed: u64) -> SampleParams {
    SampleParams {
        temperature: 1.5,
        top_k: Some(8),
        top_p: Some(0.95),
        seed,
    }
}

/// Several samples decoded together: every row of every step's logits has
/// the bits a batch of one gives for the same tokens, and each sample's
/// text (seed + i, across window restarts, each from its own context) is
/// the text its seed gives alone — f32 and f16 storage, every layout.
#[test]
fn samples_decoded_together_each_give_what_they_give_alone() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let p = params(&cfg);
    let (rows, n, prompt) = (3, 3 * cfg.block_size, [1u32, 4, 2]);
    for (fast, ln) in [FastPaths::default(), f16()]
        .into_iter()
        .flat_map(|f| KERNELS.map(|ln| (f, ln)))
    {
        let mut m = model_with(gpu, &mut reg, &p, fast, ln);
        let push_all = |dec: &mut Decoder| -> Vec<Vec<f32>> {
            dec.reset();
            let tokens = [3u32, 1, 4, 1, 5];
            let push = |&t| pollster::block_on(dec.push(&gpu.ctx, t)).unwrap();
            tokens.iter().map(push).collect()
        };
        let alone = push_all(m.decoder(&gpu.ctx, &mut reg).unwrap());
        let together = push_all(m.decoder_for(&gpu.ctx, &mut reg, rows).unwrap());
        for (step, (one, all)) in alone.iter().zip(&together).enumerate() {
            for (r, row) in all.chunks_exact(cfg.vocab_size).enumerate() {
                let bits = |l: &[f32]| l.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(row),
                    bits(one),
                    "{fast:?}, {ln:?}: step {step}, row {r}"
                );
            }
        }
        let params = sampling(40);
        let mut samplers: Vec<Sampler> = (0..rows)
            .map(|i| Sampler::new(params.for_sample(i)).unwrap())
            .collect();
        let dec = m.decoder_for(&gpu.ctx, &mut reg, rows).unwrap();
        let mut seen = vec![0; rows];
        let texts = pollster::block_on(generate_rows(
            &gpu.ctx,
            dec,
            &prompt,
            n,
            Some(&mut samplers),
            |r, _| {
                seen[r] += 1;
                ControlFlow::Continue(())
            },
        ))
        .unwrap();
        assert_eq!(
            seen,
            vec![n; rows],
            "on_token saw every token of every sample"
        );
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        for (i, text) in texts.iter().enumerate() {
            let mut s = Sampler::new(params.for_sample(i)).unwrap();
            let alone = pollster::block_on(generate_picked(
                &gpu.ctx,
                dec,
                &prompt,
                n,
                Some(&mut s),
                |_| ControlFlow::Continue(()),
            ))
            .unwrap();
            assert_eq!(text, &alone, "{fast:?}, {ln:?}: sample {i}");
        }
        assert!(texts[0] != texts[1] && texts[1] != texts[2], "{texts:?}");
    }
}

/// A batch's host tokens and draws must match its samples.
#[test]
fn a_batch_refuses_host_tokens_or_draws_that_do_not_fit_its_samples() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let p = params(&config());
    let mut m = model(gpu, &mut reg, &p, FastPaths::default());
    let dec = m.decoder_for(&gpu.ctx, &mut reg, 2).unwrap();
    dec.reset();
    let err = |r: Result<_, tinygpt_gpu::GpuError>| r.err().map(|e| e.to_string());
    let odd = err(dec.submit_greedy(&gpu.ctx, &[1, 2, 3], 1));
    assert!(odd.is_some_and(|e| e.contains("3 host tokens for 2 samples")));
    let params = sampling(1);
    let draws = err(dec.submit_picks(&gpu.ctx, &[1, 2], 2, Some((&params, &[0.5; 3]))));
    assert!(draws.is_some_and(|e| e.contains("3 draws for 2 picks of 2 samples")));
    let samplers = &mut [Sampler::new(params).unwrap()][..];
    let one = pollster::block_on(generate_rows(
        &gpu.ctx,
        dec,
        &[1],
        2,
        Some(samplers),
        |_, _| ControlFlow::Continue(()),
    ));
    assert!(one.is_err(), "one sampler for two samples");
}
