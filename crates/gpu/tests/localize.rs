//! Per-stage localisation and long-generation drift of the f16-storage
//! path against f32 (`gate::localize`): what each reports on a clean path
//! and where a fault injected into one layer's cached weights shows.

use std::rc::Rc;
use tinygpt_core::ParamKind;
use tinygpt_gpu::engine::{Gpu, GpuTrainer};
use tinygpt_gpu::gate::localize::{drift, localize};
use tinygpt_gpu::gate::FastPaths;

mod model_common;
use model_common::*;

/// Per-stage localisation: f16 storage alone drifts every stage a little
/// and no stage's error jumps; a fault in one layer's weights (layer 1's fc
/// zeroed in the cache) is named as the stage where the error jumps.
#[test]
fn localisation_names_the_stage_where_a_one_layer_fault_enters() {
    let Some(gpu) = engine_gpu() else { return };
    // Packing on the GPU (the training graph reads the cache) and on the
    // CPU (only inference does: SwiftShader in the browser).
    for pack_on_gpu in [true, false] {
        eprintln!("packing on the GPU: {pack_on_gpu}");
        localise_clean_and_faulty(&gpu, f16(pack_on_gpu, None));
    }
}

fn localise_clean_and_faulty(gpu: &Rc<Gpu>, fast: FastPaths) {
    let cfg = config();
    let mut params = tinygpt_core::init_params(&cfg, 8);
    params.iter_mut().for_each(|p| *p *= 10.0);
    let mut t = GpuTrainer {
        gpu: gpu.clone(),
        model: model(gpu, &params, FastPaths::default()),
    };
    let prompt = [1, 4, 7, 2, 9, 3];
    let clean = pollster::block_on(localize(&mut t, fast, &prompt, async |_| Ok(()))).unwrap();
    for line in clean.lines() {
        eprintln!("{line}");
    }
    assert_eq!(clean.stages.len(), 1 + 10 * cfg.n_layer + 2, "every stage");
    assert_eq!(clean.first_jump, None, "f16 storage alone does not jump");
    let worst = clean
        .stages
        .iter()
        .map(|s| s.distribution.rel_l2)
        .fold(0.0, f64::max);
    assert!(worst > 0.0 && worst < 1e-2, "f16 drift: {worst}");
    let faulty = pollster::block_on(localize(&mut t, fast, &prompt, async |t| {
        Ok(t.model
            .corrupt_f16_layer(&t.gpu.ctx, ParamKind::FcW, 1)
            .await?)
    }))
    .unwrap();
    for line in faulty.lines() {
        eprintln!("{line}");
    }
    let named = faulty.first_jump.map(|i| faulty.stages[i].name.as_str());
    assert_eq!(named, Some("layer 1 fc"));
    assert!(faulty
        .lines()
        .last()
        .unwrap()
        .contains("first jumps at layer 1 fc"));
    assert_eq!(t.model.fast_paths(), FastPaths::default(), "paths restored");
}

/// Drift over a long generation: 1,000 positions teacher-forced through the
/// KV-cache decoder (the cache restarting every 16) on f32 and on f16
/// storage, summarised by cache depth; f16 storage stays small at every
/// depth, and zeroing a layer's weights shows at every depth.
#[test]
fn drift_over_a_thousand_positions_is_measured_by_cache_depth() {
    let Some(gpu) = engine_gpu() else { return };
    let cfg = config();
    let mut params = tinygpt_core::init_params(&cfg, 9);
    params.iter_mut().for_each(|p| *p *= 10.0);
    let mut t = GpuTrainer {
        gpu: gpu.clone(),
        model: model(&gpu, &params, FastPaths::default()),
    };
    let text = tokens(1000, cfg.vocab_size as u32);
    let d = pollster::block_on(drift(&mut t, f16(true, None), &text, 4)).unwrap();
    for line in d.lines() {
        eprintln!("{line}");
    }
    assert_eq!(d.positions, 1000);
    let depths: Vec<(usize, usize)> = d.buckets.iter().map(|b| (b.0, b.1)).collect();
    assert_eq!(depths, [(0, 3), (4, 7), (8, 11), (12, 15)]);
    for (a, b, dist) in &d.buckets {
        assert!(
            dist.rel_l2 > 0.0 && dist.rel_l2 < 3e-2,
            "depth {a}–{b}: {}",
            dist.rel_l2
        );
    }
    assert!(d.overall.cosine > 0.9999);
    assert_eq!(t.model.fast_paths(), FastPaths::default(), "paths restored");
}
