//! The gate's M = 1 cases in every form the decoder runs its f16-storage
//! GEMVs on this device: on a GPU with the LayerNorm folded into the
//! prologue (rows aligned to four halves and not) and with GELU or a
//! residual add folded into the epilogue; on a CPU implementation in the
//! column layout with the same epilogues. Each is compared with the f32
//! GEMV of the same form.

use super::framework::uniform;
use super::packing::{mismatched_halves, Packer};
use super::stats::{error_distribution, gate_stats};
use crate::ops::matmul::f16w::{bind_gemv_f16w, PackedW};
use crate::ops::matmul::{bind_gemv, Fault, MatmulDesc, RowFusion};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::GateCase;

/// One decoder form: its name, K, and what is folded around the dot
/// products.
struct Form {
    name: &'static str,
    k: u32,
    layernorm: bool,
    gelu: bool,
    residual: bool,
}

/// The forms the decoder runs on this device (`DecoderKernels::for_device`).
fn forms(cpu_device: bool) -> Vec<Form> {
    let form = |name, k, layernorm, gelu, residual| Form {
        name,
        k,
        layernorm,
        gelu,
        residual,
    };
    if cpu_device {
        vec![
            form(
                "M=1 K=131 columns + GELU (decoder fc)",
                131,
                false,
                true,
                false,
            ),
            form(
                "M=1 K=136 columns + residual (decoder projections)",
                136,
                false,
                false,
                true,
            ),
        ]
    } else {
        vec![
            form(
                "M=1 K=136 LayerNorm + GELU (decoder fc, aligned rows)",
                136,
                true,
                true,
                false,
            ),
            form(
                "M=1 K=131 LayerNorm (decoder qkv, any rows)",
                131,
                true,
                false,
                false,
            ),
            form(
                "M=1 K=136 + residual (decoder projections)",
                136,
                false,
                false,
                true,
            ),
        ]
    }
}

/// Runs every decoder form of this device on seeded U[-0.2, 0.2] inputs.
pub async fn decoder_cases(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    packer: Packer,
    fault: Option<Fault>,
    rng: &mut Rng,
) -> Result<Vec<(GateCase, usize)>, GpuError> {
    let mut out = Vec::new();
    for form in forms(ctx.cpu_device) {
        out.push(compare_form(ctx, reg, packer, fault, &form, rng).await?);
    }
    Ok(out)
}

/// The form on the f16 GEMV and on the f32 GEMV; the case and the packed
/// halves that differ from RNE (none when the packer is right).
async fn compare_form(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    packer: Packer,
    fault: Option<Fault>,
    form: &Form,
    rng: &mut Rng,
) -> Result<(GateCase, usize), GpuError> {
    let (k, n) = (form.k, 128u32);
    let (x, w, b) = (uniform(rng, k), uniform(rng, n * k), uniform(rng, n));
    // LayerNorm weight near one and bias near zero, in one buffer.
    let ln: Vec<f32> = (0..2 * k)
        .map(|i| {
            if i < k {
                1.0 + rng.uniform(-0.2, 0.2)
            } else {
                rng.uniform(-0.2, 0.2)
            }
        })
        .collect();
    let c0 = uniform(rng, n);
    let desc = MatmulDesc {
        accumulate: form.residual,
        ..MatmulDesc::linear(1, k, n)
    };
    let (x_buf, w_buf, b_buf) = (
        ctx.upload("x", &x)?,
        ctx.upload("w", &w)?,
        ctx.upload("b", &b)?,
    );
    let ln_buf = ctx.upload("ln", &ln)?;
    let fusion = RowFusion {
        layernorm: form
            .layernorm
            .then(|| (View::at(&ln_buf, 0), View::at(&ln_buf, k))),
        gelu: form.gelu,
        columns: ctx.cpu_device,
        subgroups: None,
        slots: 1,
    };
    let (want_buf, got_buf) = (ctx.upload("want", &c0)?, ctx.upload("got", &c0)?);
    let bias = Some(View::from(&b_buf));
    let reference = bind_gemv(ctx, reg, desc, &x_buf, &w_buf, bias, fusion, &want_buf)?;
    let packed = packer.pack(ctx, reg, &w).await?;
    let halves = PackedW {
        fault,
        ..PackedW::at(&packed, 0)
    };
    let fast = bind_gemv_f16w(ctx, reg, desc, &x_buf, halves, bias, fusion, &got_buf)?;
    crate::kernel::submit(ctx, "gate_decoder_forms", &[&reference, &fast]);
    let want = ctx.read_f32(&want_buf, n as usize).await?;
    let got = ctx.read_f32(&got_buf, n as usize).await?;
    let words = ctx.read_bytes(&packed, packed.size()).await?;
    let mismatches = mismatched_halves(&w, bytemuck::cast_slice(&words));
    let case = GateCase {
        name: form.name.into(),
        shape: [1, k, n],
        real_weights: false,
        stats: gate_stats(&got, &want),
        distribution: error_distribution(&got, &want),
    };
    Ok((case, mismatches))
}
