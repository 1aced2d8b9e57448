//! The speed gate again with a model loaded: the start-up decision was
//! taken at the bundled model's shape, and a wider or deeper model streams
//! more weights a token, where f16 storage may pay (or stop paying). Each
//! path that passed on precision and was timed is timed again at the loaded
//! model's width and depth, and activated or turned off accordingly; a
//! model of the shape already timed gets that decision back (an earlier
//! model's may have changed it).

use super::speed::apply;
use super::{fast_path, GateOptions, SpeedShape, DEFAULT_VOCAB};
use crate::engine::{EngineError, GpuTrainer};
use tinygpt_protocol::GateReport;

/// Times `report`'s path again at `t`'s model shape (when it passed on
/// precision, was timed, and was timed at another shape) and updates the
/// report; then makes the device's activation of the path follow the
/// report and rebinds the model. `report` is the start-up one. Returns
/// whether it timed.
pub async fn retime_for_model(
    t: &mut GpuTrainer,
    report: &mut GateReport,
    now_ms: fn() -> f64,
) -> Result<bool, EngineError> {
    let shape = SpeedShape {
        width: t.model.cfg.d_model as u32,
        layers: t.model.cfg.n_layer as u32,
    };
    let (Some(path), Some(old)) = (fast_path(&report.path), report.speed.as_ref()) else {
        return Ok(false);
    };
    if !report.passed || report.speed_forced {
        return Ok(false);
    }
    let timed = old.shape != [shape.width, shape.layers];
    if timed {
        let opts = GateOptions {
            fault: None,
            vocab: DEFAULT_VOCAB,
            now_ms,
            measure_speed: true,
            speed_shape: shape,
        };
        // Moved out for the await (a RefCell guard must not cross one).
        let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
        let check = (path.speed)(&t.gpu.ctx, &mut reg, opts).await;
        *t.gpu.registry.borrow_mut() = reg;
        apply(report, path, check?);
    }
    let mut fast = t.gpu.fast_paths.get();
    (path.deactivate)(&mut fast);
    if report.active {
        (path.activate)(report, None, &mut fast);
    }
    t.gpu.fast_paths.set(fast);
    t.apply_fast_paths()?;
    Ok(timed)
}
