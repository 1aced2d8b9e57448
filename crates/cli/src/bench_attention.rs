//! `tinygpt bench`'s attention rows: each training kernel of the attention
//! at every wanted shape's training batch, timed over back-to-back calls —
//! the f32 kernels and, where the device runs them, the tensor-core ones
//! (`coop forward`, `coop dq`, `coop dkv`).

use crate::bench::{time_calls, wanted, SHAPES};
use anyhow::Result;
use serde_json::{json, Value};
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::attention::{
    bind_attention_backward, bind_attention_backward_coop, bind_attention_forward,
    bind_attention_forward_coop, coop_attention_unavailable, AttentionBackwardBuffers,
    AttentionDesc,
};
use tinygpt_gpu::{GpuContext, PipelineRegistry};

/// Rows `{shape, kernel, workgroups, us}` for the forward and both backward
/// kernels in the `Gpu` layout (zeros in: the time does not depend on them).
pub fn bench_attention(ctx: &GpuContext, quick: bool, only: Option<&str>) -> Result<Vec<Value>> {
    let reg = &mut PipelineRegistry::default();
    let iters = if quick { 2 } else { 20 };
    let mut out = Vec::new();
    for &(name, _, nh, c, t, b) in SHAPES.iter().filter(|s| wanted(s.0, quick, only)) {
        eprintln!("bench: attention {name}");
        let desc = AttentionDesc {
            b: b as u32,
            t: t as u32,
            c: c as u32,
            nh: nh as u32,
            layout: Layout::Gpu,
        };
        let qkv = ctx.zeros("bench_qkv", desc.qkv_len() as usize)?;
        let att = ctx.zeros("bench_att_out", desc.out_len() as usize)?;
        let dout = ctx.zeros("bench_att_dout", desc.out_len() as usize)?;
        let lse = ctx.zeros("bench_lse", desc.lse_len() as usize)?;
        let dqkv = ctx.zeros("bench_dqkv", desc.qkv_len() as usize)?;
        let fwd = bind_attention_forward(ctx, reg, desc, &qkv, &att, &lse, None)?;
        let bufs = AttentionBackwardBuffers {
            qkv: &qkv,
            out: &att,
            dout: &dout,
            lse: &lse,
            dqkv: &dqkv,
        };
        let bwd = bind_attention_backward(ctx, reg, desc, bufs, None)?;
        let mut kernels: Vec<_> = ["forward", "dq", "dkv"]
            .into_iter()
            .zip([fwd].into_iter().chain(bwd))
            .collect();
        match coop_attention_unavailable(ctx, &desc) {
            None => {
                let fwd =
                    bind_attention_forward_coop(ctx, reg, desc, (&qkv, &att, &lse), (None, None))?;
                let bwd = bind_attention_backward_coop(ctx, reg, desc, bufs, (None, None))?;
                let coop = ["coop forward", "coop dq", "coop dkv"].into_iter();
                kernels.extend(coop.zip([fwd].into_iter().chain(bwd)));
            }
            Some(why) => eprintln!("bench: attention {name}: no tensor-core rows ({why})"),
        }
        for (kernel, k) in &kernels {
            let s = time_calls(ctx, std::slice::from_ref(k), iters)?;
            out.push(json!({
                "shape": name, "kernel": kernel, "workgroups": k.workgroups, "us": s * 1e6,
            }));
        }
    }
    Ok(out)
}
