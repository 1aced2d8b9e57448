//! The f16-weight paths inside GpuModel — f16 storage, and f16 compute
//! where the adapter has shader-f16 (each test runs once per path, and says
//! when f16 compute did not run): forward loss against f32, the weight
//! cache after a train step (and a variant that never invalidates it,
//! caught), identical greedy text from a trained model, the loaded-model
//! gates, and fallback to f32 when a fault-injected gate fails.

use std::rc::Rc;
use tinygpt_core::data::Batch;
use tinygpt_core::sample::SampleParams;
use tinygpt_gpu::engine::{Gpu, GpuTrainer};
use tinygpt_gpu::gate::f16_storage::{REAL_COSINE_LIMIT, REAL_REL_L2_LIMIT};
use tinygpt_gpu::gate::freshness::check_f16_cache;
use tinygpt_gpu::gate::model_gate::run_model_gates;
use tinygpt_gpu::gate::{coop_matrix, fast_path, subgroups};
use tinygpt_gpu::gate::{run_gates, FastPaths, Fault, GateOptions, BUNDLED_SHAPE};

mod model_common;
use model_common::*;

#[test]
fn f16_forward_loss_matches_f32_with_gpu_and_cpu_packing() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let mut params = tinygpt_core::init_params(&cfg, 3);
    // Larger than the init so the linears matter to the loss.
    params.iter_mut().for_each(|p| *p *= 10.0);
    let b = batches(3, 5, &train_config(1), cfg.vocab_size as u32);
    let want = eval(&gpu, &mut model(&gpu, &params, FastPaths::default()), &b);
    for (lever, pack_on_gpu) in levers(&gpu, "forward loss")
        .into_iter()
        .flat_map(|l| [(l, true), (l, false)])
    {
        let mut m = model(&gpu, &params, on(lever, pack_on_gpu, None));
        let got = eval(&gpu, &mut m, &b);
        eprintln!("{lever:?}, pack_on_gpu {pack_on_gpu}: f16 {got} vs f32 {want}");
        if pack_on_gpu {
            assert!((got - want).abs() < 2e-3 * want.abs(), "{got} vs {want}");
            assert_ne!(got, want, "the f16 path did not run");
        } else {
            // A step cannot wait for a CPU repack, so with CPU packing the
            // training graph stays f32 (only sampling reads halves).
            assert_eq!(got, want);
        }
    }
    // The speed gate found the training forward slower with halves: the
    // training graph stays f32 though the GPU packs.
    let mut off = f16(true, None);
    off.f16_storage.as_mut().unwrap().training = false;
    assert_eq!(eval(&gpu, &mut model(&gpu, &params, off), &b), want);
}

/// After a step the f16 forward must see the updated weights; a variant
/// that never invalidates the cache still sees the old ones and is caught.
#[test]
fn the_weight_cache_is_invalidated_by_every_train_step() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let tc = train_config(200);
    let old = tinygpt_core::init_params(&cfg, 4);
    let step_batches = batches(5, 8, &tc, cfg.vocab_size as u32);
    let eval_b = batches(2, 9, &tc, cfg.vocab_size as u32);
    for lever in levers(&gpu, "cache invalidation") {
        cache_follows_the_steps(&gpu, lever, &old, (&step_batches, &eval_b));
    }
}

fn cache_follows_the_steps(
    gpu: &Gpu,
    lever: Lever,
    old: &[f32],
    (step_batches, eval_b): (&[Batch], &[Batch]),
) {
    let run = |fault: Option<Fault>| {
        let mut m = model(gpu, old, on(lever, true, fault));
        // Evaluate first, so the cache is filled with the old weights.
        let before = eval(gpu, &mut m, eval_b);
        for b in step_batches {
            m.train_step(&gpu.ctx, &mut gpu.registry.borrow_mut(), b)
                .unwrap();
        }
        let after = eval(gpu, &mut m, eval_b);
        let new = pollster::block_on(m.read_params(&gpu.ctx)).unwrap();
        (before, after, new)
    };
    let (_, after, new) = run(None);
    let f32_new = eval(gpu, &mut model(gpu, &new, FastPaths::default()), eval_b);
    let f32_old = eval(gpu, &mut model(gpu, old, FastPaths::default()), eval_b);
    eprintln!("{lever:?} after steps {after}, f32 of new weights {f32_new}, of old {f32_old}");
    assert!(
        (f32_new - f32_old).abs() > 0.05,
        "the steps must move the loss"
    );
    assert!(
        (after - f32_new).abs() < 1e-3 * f32_new,
        "{after} vs {f32_new}"
    );

    // The stale variant's linears still read the old weights (while biases,
    // LayerNorms, embeddings and the head are current), so its loss is far
    // from the updated model's.
    let (before, stale_after, _) = run(Some(Fault::StaleCache));
    eprintln!("{lever:?} stale-cache variant: {before} → {stale_after}");
    let fresh_err = (after - f32_new).abs();
    let stale_err = (stale_after - f32_new).abs();
    assert!(
        stale_err > 0.05 && stale_err > 50.0 * fresh_err,
        "stale cache not caught: {stale_err} vs {fresh_err}"
    );
}

/// The claim the original never tested: a trained model writes the same
/// greedy text on the f16 and f32 paths.
#[test]
fn a_trained_model_generates_identical_greedy_text_on_f16_and_f32() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let steps = 150;
    let tc = train_config(steps);
    let mut trainer = GpuTrainer::new(gpu.clone(), cfg, tc).unwrap();
    let b = batches(steps, 1, &tc, cfg.vocab_size as u32);
    let first = pollster::block_on(trainer.steps(&b[..1])).unwrap();
    let last = pollster::block_on(trainer.steps(&b[1..])).unwrap();
    eprintln!("trained: loss {first} → {last}");
    assert!(last < first * 0.8, "{first} → {last}");
    let params = pollster::block_on(trainer.params()).unwrap();
    let text = |fast: FastPaths| {
        let mut t = GpuTrainer {
            gpu: gpu.clone(),
            model: model(&gpu, &params, fast),
        };
        pollster::block_on(t.generate(&[1, 4, 7], 100, &SampleParams::greedy(), |_| {
            std::ops::ControlFlow::Continue(())
        }))
        .unwrap()
    };
    let want = text(FastPaths::default());
    assert_eq!(want.len(), 100);
    for pack_on_gpu in [true, false] {
        let got = text(f16(pack_on_gpu, None));
        assert_eq!(got, want, "pack_on_gpu {pack_on_gpu}");
    }
    // The same through the model gates (real weights + sample gate).
    let opts = GateOptions {
        fault: None,
        vocab: cfg.vocab_size as u32,
        now_ms: || 0.0,
        measure_speed: false,
        speed_shape: BUNDLED_SHAPE,
    };
    let (mut reports, active) =
        pollster::block_on(run_gates(&gpu.ctx, &mut gpu.registry.borrow_mut(), opts));
    gpu.fast_paths.set(active);
    let mut t = GpuTrainer::on(gpu.clone(), model(&gpu, &params, FastPaths::default())).unwrap();
    pollster::block_on(run_model_gates(
        &mut t,
        &mut reports[0],
        &[1, 4, 7],
        "147",
        &digits,
    ))
    .unwrap();
    for line in &reports[0].lines {
        eprintln!("{line}");
    }
    let sample = reports[0].sample.as_ref().unwrap();
    assert!(sample.passed && sample.tokens == 100, "{sample:?}");
    // Both texts are kept for the page's side-by-side view.
    assert_eq!(sample.f32_text.chars().count(), 100, "{sample:?}");
    assert_eq!(sample.f32_text, sample.fast_text);
    // All four linears of both layers, each fed its real input.
    let real: Vec<_> = reports[0].cases.iter().filter(|c| c.real_weights).collect();
    assert_eq!(real.len(), 4 * cfg.n_layer);
    for (i, name) in ["qkv", "attn_proj", "fc", "fc_proj"].iter().enumerate() {
        assert!(real[i].name.contains(name), "{}", real[i].name);
    }
    let d_ins: Vec<u32> = real[..4].iter().map(|c| c.shape[1]).collect();
    assert_eq!(d_ins, [21, 21, 21, 84], "the real inputs' widths");
    for c in &real {
        assert_eq!(c.shape[0], 3, "the prompt's three rows");
        assert!(c.distribution.rel_l2 < REAL_REL_L2_LIMIT, "{c:#?}");
        assert!(c.distribution.cosine > REAL_COSINE_LIMIT, "{c:#?}");
    }
    assert!(reports[0].active, "{:#?}", reports[0].cases);
    assert!(t.model.fast_paths().f16_storage.is_some());
    // f16 compute: the real-weight cases through its kernel (three rows:
    // the tiled kernel), and no sample gate (it does not decode).
    if levers(&gpu, "real weights").contains(&Lever::Compute) {
        let r = &mut reports[1];
        pollster::block_on(run_model_gates(&mut t, r, &[1, 4, 7], "147", &digits)).unwrap();
        for line in &r.lines {
            eprintln!("{line}");
        }
        let real: Vec<_> = r.cases.iter().filter(|c| c.real_weights).collect();
        assert_eq!(real.len(), 4 * cfg.n_layer);
        assert!(real.iter().all(|c| c.stats.passed), "{real:#?}");
        assert!(r.sample.is_none() && r.active);
        assert!(t.model.fast_paths().f16_compute.is_some());
    }
}

/// A kernel fault that reached an active path fails the real-weight cases
/// (K = d_model = 21 ends in a partial tile), and every verdict changes:
/// the headline, a last line naming the failed cases, the path off.
#[test]
fn a_loaded_model_gate_failure_rewrites_every_verdict() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let params = tinygpt_core::init_params(&cfg, 6);
    let opts = GateOptions {
        fault: None,
        vocab: cfg.vocab_size as u32,
        now_ms: || 0.0,
        measure_speed: false,
        speed_shape: BUNDLED_SHAPE,
    };
    let (reports, _) =
        pollster::block_on(run_gates(&gpu.ctx, &mut gpu.registry.borrow_mut(), opts));
    for lever in levers(&gpu, "loaded-model gate failure") {
        let i = (lever == Lever::Compute) as usize;
        let mut report = reports[i].clone();
        assert!(
            report.lines[0].contains("— PASS — f16"),
            "{}",
            report.lines[0]
        );
        // As if the fault had slipped past the start-up gate.
        gpu.fast_paths.set(on(lever, true, Some(Fault::DropKTail)));
        let mut t =
            GpuTrainer::on(gpu.clone(), model(&gpu, &params, FastPaths::default())).unwrap();
        pollster::block_on(run_model_gates(
            &mut t,
            &mut report,
            &[1, 4, 7, 2],
            "1472",
            &digits,
        ))
        .unwrap();
        let lines = &report.lines;
        for line in lines {
            eprintln!("{line}");
        }
        assert!(!report.active && !report.passed);
        assert!(
            lines[0]
                .ends_with("— PASS on random inputs, FAIL on the loaded model — f32 path active"),
            "{}",
            lines[0]
        );
        let last = lines.last().unwrap();
        assert!(
            last.starts_with(&format!(
                "[ops] {} gate on the loaded model — FAIL (layer 0 qkv",
                report.label
            )) && last.ends_with("— back to f32"),
            "{last}"
        );
        assert!(lines
            .iter()
            .any(|l| l.contains("(real weights)") && l.contains("— FAIL (")));
        assert_eq!(gpu.fast_paths.get(), FastPaths::default());
        assert_eq!(t.model.fast_paths(), FastPaths::default());
    }
}

#[test]
fn a_failed_gate_leaves_the_model_on_f32() {
    let Some(gpu) = engine_gpu() else { return };
    for fault in [Fault::F16Accumulate, Fault::DropKTail, Fault::TruncatePack] {
        let opts = GateOptions {
            fault: Some(fault),
            vocab: config().vocab_size as u32,
            now_ms: || 0.0,
            measure_speed: false,
            speed_shape: BUNDLED_SHAPE,
        };
        let (reports, active) =
            pollster::block_on(run_gates(&gpu.ctx, &mut gpu.registry.borrow_mut(), opts));
        // Every detected path whose kernels carry the fault fails; the
        // others run their real kernels and pass (the tensor cores carry
        // only the dropped K tail: `coop::carries`; the subgroup sums the
        // two kernel faults: `subgroups::carries`).
        let carries = |path: &str| fast_path(path).is_some_and(|p| (p.carries)(fault));
        for r in reports.iter().filter(|r| r.detected) {
            assert_eq!(r.passed, !carries(&r.path), "{} {fault:?}", r.path);
        }
        assert!(reports[0].detected);
        assert!(
            !(active.coop_matrix && carries(coop_matrix::PATH.id)),
            "{fault:?}"
        );
        assert!(
            !(active.subgroups && carries(subgroups::PATH.id)),
            "{fault:?}"
        );
        gpu.fast_paths.set(active);
        let t = GpuTrainer::new(gpu.clone(), config(), train_config(10)).unwrap();
        // No path that failed is on: f32, or the paths that passed.
        let expected = FastPaths {
            coop_matrix: active.coop_matrix,
            subgroups: active.subgroups,
            ..FastPaths::default()
        };
        assert_eq!(t.model.fast_paths(), expected, "{fault:?}");
    }
}

/// The freshness gate: after train steps a cache that follows its own
/// invalidation equals the f32 weights (GPU and CPU packing); the `stale`
/// variant, which skips it, differs, fails the check, and the path turns
/// off on the device — the model trains on in f32 with nothing lost.
#[test]
fn the_cache_check_passes_a_fresh_cache_and_turns_a_stale_one_off() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let tc = train_config(200);
    let b = batches(4, 21, &tc, cfg.vocab_size as u32);
    let params = tinygpt_core::init_params(&cfg, 5);
    let trainer = |fast: FastPaths| {
        gpu.fast_paths.set(fast);
        GpuTrainer {
            gpu: gpu.clone(),
            model: model(&gpu, &params, fast),
        }
    };
    for lever in levers(&gpu, "cache check") {
        for pack_on_gpu in [true, false] {
            let mut t = trainer(on(lever, pack_on_gpu, None));
            pollster::block_on(t.steps(&b)).unwrap();
            let check = pollster::block_on(check_f16_cache(&mut t))
                .unwrap()
                .unwrap();
            eprintln!("{lever:?}: {}", check.line);
            assert!(
                check.passed() && check.total == t.model.layout.total,
                "{check:?}"
            );
            assert!(check.line.ends_with("— PASS"), "{}", check.line);
            assert_ne!(t.model.fast_paths(), FastPaths::default());
        }
        stale_cache_turns_off(&gpu, &trainer, lever, &b);
    }
}

fn stale_cache_turns_off(
    gpu: &Rc<Gpu>,
    trainer: &dyn Fn(FastPaths) -> GpuTrainer,
    lever: Lever,
    b: &[Batch],
) {
    let mut t = trainer(on(lever, true, Some(Fault::StaleCache)));
    // Filled before the steps, never invalidated after them.
    pollster::block_on(t.model.prepare_inference(&gpu.ctx)).unwrap();
    let first = pollster::block_on(t.steps(b)).unwrap();
    let check = pollster::block_on(check_f16_cache(&mut t))
        .unwrap()
        .unwrap();
    eprintln!("{lever:?}: {}", check.line);
    assert!(!check.passed() && check.mismatches > 100, "{check:?}");
    assert!(check
        .line
        .contains("differ from the f32 weights — FAIL — f32 path active"));
    assert_eq!(
        gpu.fast_paths.get(),
        FastPaths::default(),
        "off on the device"
    );
    assert_eq!(
        t.model.fast_paths(),
        FastPaths::default(),
        "the model rebound in f32"
    );
    // Training goes on, in f32, from where it was.
    let next = pollster::block_on(t.steps(b)).unwrap();
    assert!(next.is_finite() && next < first, "{first} → {next}");
    assert!(pollster::block_on(check_f16_cache(&mut t))
        .unwrap()
        .is_none());
    gpu.fast_paths.set(FastPaths::default());
}
