//! The speed gate with a model loaded (`gate::model_speed`): a model of
//! another shape than the start-up one is timed at its own width and depth,
//! the path follows that verdict on the device, and a model of the start-up
//! shape gets the start-up decision back.

use std::rc::Rc;
use tinygpt_core::{ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{Gpu, GpuTrainer};
use tinygpt_gpu::gate::model_speed::retime_for_model;
use tinygpt_gpu::gate::{run_gates, GateOptions, BUNDLED_SHAPE, DEFAULT_VOCAB};

fn now_ms() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

fn trainer(gpu: &Rc<Gpu>, d_model: usize, n_layer: usize) -> GpuTrainer {
    let cfg = ModelConfig {
        vocab_size: 11,
        block_size: 16,
        n_layer,
        n_head: 4,
        d_model,
    };
    let train = TrainConfig {
        batch_size: 2,
        seq_len: 16,
        ..TrainConfig::default()
    };
    GpuTrainer::new(gpu.clone(), cfg, train).unwrap()
}

#[test]
fn a_model_of_another_shape_is_timed_at_its_own_and_the_path_follows() {
    tinygpt_gpu::gpu_or_skip!();
    let gpu = Gpu::new(tinygpt_gpu::testing::open_context());
    let opts = GateOptions {
        fault: None,
        vocab: DEFAULT_VOCAB,
        now_ms,
        measure_speed: true,
        speed_shape: BUNDLED_SHAPE,
    };
    let (reports, active) =
        pollster::block_on(run_gates(&gpu.ctx, &mut gpu.registry.borrow_mut(), opts));
    gpu.fast_paths.set(active);
    let start = reports[0].clone();
    assert_eq!(start.speed.as_ref().unwrap().shape, [256, 4]);

    // Another shape: timed there, and the device follows the new verdict.
    let mut t = trainer(&gpu, 64, 2);
    let mut r = start.clone();
    assert!(pollster::block_on(retime_for_model(&mut t, &mut r, now_ms)).unwrap());
    let s = r.speed.as_ref().unwrap();
    eprintln!("{}", r.lines[1]);
    assert_eq!(s.shape, [64, 2]);
    assert!(
        s.workload
            .starts_with("decode step's linears, 2 layers at C=64, "),
        "{}",
        s.workload
    );
    assert_eq!(r.active, s.faster());
    assert_eq!(gpu.fast_paths.get().f16_storage.is_some(), r.active);
    assert_eq!(
        t.model.fast_paths(),
        gpu.fast_paths.get(),
        "the model rebound"
    );
    assert_eq!(r.lines.iter().filter(|l| l.contains(" speed: ")).count(), 1);

    // Whatever that model did, the start-up shape gets the start-up decision.
    gpu.fast_paths.set(Default::default());
    let mut same = trainer(&gpu, 256, 4);
    let mut r = start.clone();
    assert!(!pollster::block_on(retime_for_model(&mut same, &mut r, now_ms)).unwrap());
    assert_eq!(r, start, "not timed again");
    assert_eq!(gpu.fast_paths.get().f16_storage.is_some(), start.active);

    // With the speed gate off, nothing is timed and nothing changes.
    let off = GateOptions {
        measure_speed: false,
        ..opts
    };
    let (reports, active) =
        pollster::block_on(run_gates(&gpu.ctx, &mut gpu.registry.borrow_mut(), off));
    gpu.fast_paths.set(active);
    let mut r = reports[0].clone();
    assert!(!pollster::block_on(retime_for_model(&mut t, &mut r, now_ms)).unwrap());
    assert!(r.active && gpu.fast_paths.get().f16_storage.is_some());
}
