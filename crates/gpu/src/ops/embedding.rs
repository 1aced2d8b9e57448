//! Token + position embedding, forward and backward.
//!
//! Mirrors `encoder_forward` / `encoder_backward` of
//! `tinygpt_core::model::layers`: `y[n] = tok_emb[inputs[n]] + pos_emb[n % T]`,
//! and the backward *adds* into `dtok_emb` and `dpos_emb` (the tied head's
//! matmul has already accumulated its share of `dtok_emb`).

use super::attention::POSITION_BYTES;
use super::common::{
    bind_kernel, check_dim, check_no_alias, grid, shape_error, uniform, BoundOp, View,
};
use crate::kernel::{BoundKernel, Layout};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const EMBEDDING_FORWARD: KernelSource = KernelSource {
    key: "embedding_forward",
    wgsl: include_str!("../../../../shaders/embedding.wgsl"),
    entry: "forward",
    constants: &[],
};

pub const EMBEDDING_FORWARD_DECODE: KernelSource = KernelSource {
    key: "embedding_forward_decode",
    wgsl: include_str!("../../../../shaders/embedding.wgsl"),
    entry: "forward_decode",
    constants: &[],
};

pub const EMBEDDING_BACKWARD_TOK: KernelSource = KernelSource {
    key: "embedding_backward_tok",
    wgsl: include_str!("../../../../shaders/embedding_backward.wgsl"),
    entry: "tok",
    constants: &[],
};

/// [`EMBEDDING_BACKWARD_TOK`] in the [`Layout::Cpu`] layout.
pub const EMBEDDING_BACKWARD_TOK_SERIAL: KernelSource = KernelSource {
    key: "embedding_backward_tok_serial",
    wgsl: include_str!("../../../../shaders/embedding_backward.wgsl"),
    entry: "tok_serial",
    constants: &[],
};

pub const EMBEDDING_BACKWARD_POS: KernelSource = KernelSource {
    key: "embedding_backward_pos",
    wgsl: include_str!("../../../../shaders/embedding_backward.wgsl"),
    entry: "pos",
    constants: &[],
};

/// Channels per workgroup of the `dtok_emb` gather.
const TOK_CHANNELS: u32 = 128;

/// `N = B·T` rows of `C` channels over a `V`-token vocabulary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbeddingDesc {
    /// Rows `N = B·T`.
    pub n: u32,
    /// Sequence length `T`: row `n` sits at position `n % T`.
    pub t: u32,
    pub c: u32,
    pub v: u32,
    /// Rows of `pos_emb` (`T_max`, the model's block size).
    pub t_max: u32,
}

impl EmbeddingDesc {
    fn check(&self) -> Result<(), GpuError> {
        if self.t == 0 || self.c == 0 || self.v == 0 || self.t > self.t_max {
            return Err(shape_error(
                "embedding",
                format!("{self:?} needs T, C, V ≥ 1 and T ≤ T_max"),
            ));
        }
        Ok(())
    }
}

/// Binds `y (N, C) = tok_emb[inputs] + pos_emb[n % T]`. With `decode_position`
/// (the 16-byte uniform of `ops::attention::decode_position_buffer`), rows sit
/// at `p + n % T` instead, `p` read from that uniform when the kernel runs.
/// Overwrites `y`; reads `inputs (N)` u32, `tok_emb (V, C)`, `pos_emb (T_max, C)`.
#[allow(clippy::too_many_arguments)]
pub fn bind_embedding_forward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: EmbeddingDesc,
    inputs: impl Into<View<'a>>,
    tok_emb: impl Into<View<'a>>,
    pos_emb: impl Into<View<'a>>,
    y: impl Into<View<'a>>,
    decode_position: Option<&wgpu::Buffer>,
) -> Result<BoundKernel, GpuError> {
    desc.check()?;
    let (inputs, tok_emb, pos_emb, y) = (inputs.into(), tok_emb.into(), pos_emb.into(), y.into());
    let (n, c) = (desc.n as u64, desc.c as u64);
    inputs.need("embedding", "inputs", n)?;
    tok_emb.need("embedding", "tok_emb", desc.v as u64 * c)?;
    pos_emb.need("embedding", "pos_emb", desc.t_max as u64 * c)?;
    y.need("embedding", "y", n * c)?;
    check_no_alias(
        "embedding",
        &[("y", y.buffer)],
        &[
            ("inputs", inputs.buffer),
            ("tok_emb", tok_emb.buffer),
            ("pos_emb", pos_emb.buffer),
        ],
    )?;
    let params = uniform(
        ctx,
        "embedding_params",
        &[
            desc.n,
            desc.t,
            desc.c,
            inputs.offset,
            tok_emb.offset,
            pos_emb.offset,
            y.offset,
        ],
    );
    let mut entries = vec![
        (1, inputs.buffer),
        (2, tok_emb.buffer),
        (3, pos_emb.buffer),
        (4, y.buffer),
    ];
    let src = match decode_position {
        Some(position) => {
            if position.size() < POSITION_BYTES {
                return Err(shape_error(
                    "embedding",
                    format!(
                        "the decode position uniform holds {} bytes, needs {POSITION_BYTES}",
                        position.size()
                    ),
                ));
            }
            entries.push((5, position));
            &EMBEDDING_FORWARD_DECODE
        }
        None => &EMBEDDING_FORWARD,
    };
    let groups = (desc.n * desc.c).div_ceil(256);
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &params,
        &entries,
        grid(ctx, groups),
    ))
}

/// Binds the backward: `dtok_emb (V, C) += scatter of dout (N, C) by token`
/// and `dpos_emb (T_max, C)[0..T] += Σ over the batch`. Both are always
/// accumulated, in the CPU reference's order (see the shader); `layout`
/// picks a workgroup per token or an invocation per (token, channel).
#[allow(clippy::too_many_arguments)]
pub fn bind_embedding_backward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    layout: Layout,
    desc: EmbeddingDesc,
    inputs: impl Into<View<'a>>,
    dout: impl Into<View<'a>>,
    dtok_emb: impl Into<View<'a>>,
    dpos_emb: impl Into<View<'a>>,
) -> Result<BoundOp, GpuError> {
    desc.check()?;
    let (inputs, dout) = (inputs.into(), dout.into());
    let (dtok_emb, dpos_emb) = (dtok_emb.into(), dpos_emb.into());
    let (n, c) = (desc.n as u64, desc.c as u64);
    inputs.need("embedding_backward", "inputs", n)?;
    dout.need("embedding_backward", "dout", n * c)?;
    dtok_emb.need("embedding_backward", "dtok_emb", desc.v as u64 * c)?;
    dpos_emb.need("embedding_backward", "dpos_emb", desc.t_max as u64 * c)?;
    check_no_alias(
        "embedding_backward",
        &[("dtok_emb", dtok_emb.buffer), ("dpos_emb", dpos_emb.buffer)],
        &[("inputs", inputs.buffer), ("dout", dout.buffer)],
    )?;
    check_dim(
        ctx,
        "embedding_backward",
        "one workgroup row per token",
        desc.v,
    )?;
    let params = uniform(
        ctx,
        "embedding_backward_params",
        &[
            desc.n,
            desc.t,
            desc.c,
            inputs.offset,
            dout.offset,
            dtok_emb.offset,
            dpos_emb.offset,
        ],
    );
    let entries = [
        (1, inputs.buffer),
        (2, dout.buffer),
        (3, dtok_emb.buffer),
        (4, dpos_emb.buffer),
    ];
    let (tok_src, channels) = match layout {
        Layout::Gpu => (&EMBEDDING_BACKWARD_TOK, TOK_CHANNELS),
        Layout::Cpu => (&EMBEDDING_BACKWARD_TOK_SERIAL, 64),
    };
    let tok = bind_kernel(
        ctx,
        registry,
        tok_src,
        &params,
        &[entries[0], entries[1], entries[2]],
        [desc.c.div_ceil(channels), desc.v, 1],
    );
    let pos = bind_kernel(
        ctx,
        registry,
        &EMBEDDING_BACKWARD_POS,
        &params,
        &[entries[1], entries[3]],
        grid(ctx, (desc.t * desc.c).div_ceil(256)),
    );
    Ok(BoundOp {
        kernels: vec![tok, pos],
        scratch: Vec::new(),
    })
}
