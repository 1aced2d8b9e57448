//! The f32 matmul in the three layouts training needs.

use crate::kernel::{bind_group, BoundKernel};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const MATMUL_F32: KernelSource = KernelSource {
    key: "matmul_f32_64x64_k16",
    wgsl: include_str!("../../../shaders/matmul.wgsl"),
    entry: "main",
};

/// Output tile edge of the kernel (rows and columns per workgroup).
pub const MATMUL_TILE: u32 = 64;

/// `C (M, N) = op(A) · op(B) [+ bias] [+ C]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatmulDesc {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// A is stored `(K, M)`.
    pub trans_a: bool,
    /// B is stored `(N, K)`: the `(out, in)` layout of a linear weight.
    pub trans_b: bool,
    /// Add `bias (N)` to every row.
    pub bias: bool,
    /// Add into the existing contents of C (gradient accumulation).
    pub accumulate: bool,
}

impl MatmulDesc {
    /// `x (M, K) · Wᵀ` with `W (N, K)`: a linear layer's forward.
    pub fn linear(m: u32, k: u32, n: u32) -> Self {
        Self {
            m,
            k,
            n,
            trans_b: true,
            bias: true,
            ..Default::default()
        }
    }

    fn flags(&self) -> u32 {
        (self.trans_a as u32)
            | (self.trans_b as u32) << 1
            | (self.bias as u32) << 2
            | (self.accumulate as u32) << 3
    }

    fn uniform_bytes(&self, offsets: [u32; 4]) -> [u8; 32] {
        let [a, b, bias, c] = offsets;
        bytemuck::cast([self.m, self.k, self.n, self.flags(), a, b, bias, c])
    }
}

/// Binds one matmul to its operands (views into larger buffers allowed).
/// `bias` is required iff `desc.bias`. C must not share a buffer with A, B
/// or the bias (WebGPU forbids reading and writing one buffer in a dispatch).
pub fn bind_matmul<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    if desc.bias != bias.is_some() {
        return Err(GpuError::Shape {
            op: "matmul",
            detail: format!(
                "desc.bias is {} but a bias buffer was {}given",
                desc.bias,
                if bias.is_some() { "" } else { "not " }
            ),
        });
    }
    a.need("matmul", "A", desc.m as u64 * desc.k as u64)?;
    b.need("matmul", "B", desc.k as u64 * desc.n as u64)?;
    c.need("matmul", "C", desc.m as u64 * desc.n as u64)?;
    if let Some(bias) = &bias {
        bias.need("matmul", "bias", desc.n as u64)?;
    }
    for (name, read) in [("A", Some(a)), ("B", Some(b)), ("bias", bias)] {
        if read.is_some_and(|r| r.buffer == c.buffer) {
            return Err(GpuError::Shape {
                op: "matmul",
                detail: format!("C (written) and {name} (read) share a buffer"),
            });
        }
    }
    let pipeline = registry.get(&ctx.device, &MATMUL_F32);
    // An unused bias binding still needs a buffer: A is read-only, so reuse it.
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let uniform = ctx.uniform("matmul_params", &desc.uniform_bytes(offsets));
    let buffers = [&uniform, a.buffer, b.buffer, bias.buffer, c.buffer];
    let bind_group = bind_group(&ctx.device, &pipeline, MATMUL_F32.key, &buffers);
    Ok(BoundKernel {
        key: MATMUL_F32.key,
        pipeline,
        bind_group,
        workgroups: [
            desc.n.div_ceil(MATMUL_TILE),
            desc.m.div_ceil(MATMUL_TILE),
            1,
        ],
        _uniform: Some(uniform),
    })
}

/// Uploads, runs and reads back one matmul: for tests and start-up checks.
pub async fn matmul_once(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, GpuError> {
    let a_buf = ctx.upload("a", a)?;
    let b_buf = ctx.upload("b", b)?;
    let bias_buf = bias.map(|v| ctx.upload("bias", v)).transpose()?;
    let c_buf = ctx.zeros("c", (desc.m * desc.n) as usize)?;
    let k = bind_matmul(
        ctx,
        registry,
        desc,
        &a_buf,
        &b_buf,
        bias_buf.as_ref().map(View::from),
        &c_buf,
    )?;
    crate::kernel::submit(ctx, "matmul_once", &[&k]);
    ctx.read_f32(&c_buf, (desc.m * desc.n) as usize).await
}

/// CPU reference of the same op, in f64 accumulation.
pub fn matmul_reference(desc: MatmulDesc, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for kk in 0..k {
                let av = if desc.trans_a {
                    a[kk * m + i]
                } else {
                    a[i * k + kk]
                };
                let bv = if desc.trans_b {
                    b[j * k + kk]
                } else {
                    b[kk * n + j]
                };
                acc += av as f64 * bv as f64;
            }
            if let Some(bias) = bias {
                acc += bias[j] as f64;
            }
            c[i * n + j] = acc as f32;
        }
    }
    c
}
