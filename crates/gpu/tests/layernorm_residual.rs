//! The residual add fused with the LayerNorm after it
//! (`bind_layernorm_residual`, the training graph's two adds a block)
//! against the two kernels it replaces — the residual kernel (or, training
//! with dropout, the dropout kernel adding the masked branch) then the
//! LayerNorm kernel — bit for bit: the stream it writes, the LayerNorm's
//! output and its per-row statistics. Both kernel layouts, odd row and
//! channel counts, operands at offsets (without dropout: the dropout kernel
//! takes whole buffers), and one step's mask against another's.

use tinygpt_core::model::Site;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel, Layout};
use tinygpt_gpu::ops::dropout::{bind_dropout, DropoutDesc};
use tinygpt_gpu::ops::layernorm::{
    bind_layernorm_forward, bind_layernorm_residual, LayerNormDesc, ResidualAdd,
};
use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
use tinygpt_gpu::ops::residual::bind_residual_forward;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{assert_copy_is_staged, has_shader_f16, random_in, TestGpu};

/// (N, C): one channel, fewer channels than a row's 128 threads, more.
const SHAPES: [(u32, u32); 4] = [(3, 1), (7, 13), (33, 128), (5, 300)];

/// Where each operand starts in its buffer (none with dropout).
const OFF: u32 = 3;

/// The stream, the LayerNorm's output, and its mean and rstd.
type Outputs = [Vec<f32>; 4];

struct Bufs {
    base: wgpu::Buffer,
    branch: wgpu::Buffer,
    params: wgpu::Buffer,
    state: wgpu::Buffer,
}

fn upload(gpu: &TestGpu, (n, c): (u32, u32), off: u32, seed: u64) -> Bufs {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let nc = (n * c) as usize;
    let pad = |v: Vec<f32>| [vec![7.0; off as usize], v].concat();
    let base = pad(random_in(&mut rng, nc, -1.5, 2.5));
    let branch = pad(random_in(&mut rng, nc, -1.0, 1.0));
    let w = random_in(&mut rng, c as usize, 0.5, 1.5);
    let b = random_in(&mut rng, c as usize, -0.5, 0.5);
    Bufs {
        base: ctx.upload("base", &base).unwrap(),
        branch: ctx.upload("branch", &branch).unwrap(),
        params: ctx.upload("params", &[w, b].concat()).unwrap(),
        // The step counter the masks read: a step past the first.
        state: ctx
            .upload_bytes("state", bytemuck::cast_slice(&[5u32, 0, 0, 0]))
            .unwrap(),
    }
}

/// Runs `fused` (or the two kernels) and reads the outputs back; with
/// `copy`, the LayerNorm writes its output's f16 copy too, which must be
/// the tensor-core path's staging of it.
fn run(
    gpu: &TestGpu,
    (desc, off): (LayerNormDesc, u32),
    io: &Bufs,
    drop: Option<f32>,
    (fused, copy): (bool, bool),
) -> Outputs {
    let ctx = &gpu.ctx;
    let (n, c) = (desc.n, desc.c);
    let nc = n * c;
    let zeros = |len: u32| ctx.zeros("out", (off + len) as usize).unwrap();
    let (x, y, mean, rstd) = (zeros(nc), zeros(nc), zeros(n), zeros(n));
    let at = |b| View::at(b, off);
    let (w, b) = (View::at(&io.params, 0), View::at(&io.params, c));
    let d = drop.map(|p| DropoutDesc {
        p,
        seed: 0x5eed_0001_0002,
        state: &io.state,
    });
    let site = Site::Mlp(1);
    let copy = copy.then(|| StagedRows::for_producer(ctx, at(&y), (n, c), 1.0).unwrap());
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let ks: Vec<BoundKernel> = if fused {
        let add = ResidualAdd {
            base: at(&io.base),
            branch: at(&io.branch),
            drop: d.map(|d| (d, site)),
            x: at(&x),
        };
        let outs = [at(&y), at(&mean), at(&rstd)];
        let k = bind_layernorm_residual(ctx, &mut reg, desc, add, [w, b], outs, copy.as_ref());
        vec![k.unwrap()]
    } else {
        let add = match d {
            Some(d) => bind_dropout(ctx, &mut reg, d, site, nc, Some(&io.base), &io.branch, &x),
            None => bind_residual_forward(ctx, &mut reg, nc, at(&io.base), at(&io.branch), at(&x)),
        };
        let ln = bind_layernorm_forward(
            ctx,
            &mut reg,
            desc,
            at(&x),
            w,
            b,
            at(&y),
            at(&mean),
            at(&rstd),
            copy.as_ref(),
        );
        vec![add.unwrap(), ln.unwrap()]
    };
    std::mem::drop(reg);
    submit(ctx, "layernorm_residual", &ks.iter().collect::<Vec<_>>());
    let read = |buf, len: u32| {
        let v = pollster::block_on(ctx.read_f32(buf, (off + len) as usize)).unwrap();
        v[off as usize..].to_vec()
    };
    if let Some(copy) = &copy {
        let what = format!("({n}, {c}) {:?} fused {fused}: y's f16 copy", desc.layout);
        assert_copy_is_staged(gpu, copy, at(&y), (n, c), &what);
    }
    [read(&x, nc), read(&y, nc), read(&mean, n), read(&rstd, n)]
}

#[test]
fn the_fused_add_and_layernorm_give_the_two_kernels_bits() {
    let gpu = gpu_or_skip!();
    for (i, &(n, c)) in SHAPES.iter().enumerate() {
        for layout in [Layout::Gpu, Layout::Cpu] {
            for drop in [None, Some(0.2)] {
                let off = if drop.is_some() { 0 } else { OFF };
                let io = upload(gpu, (n, c), off, 700 + i as u64);
                let desc = LayerNormDesc {
                    n,
                    c,
                    accumulate: false,
                    layout,
                };
                let want = run(gpu, (desc, off), &io, drop, (false, false));
                let got = run(gpu, (desc, off), &io, drop, (true, false));
                same_bits(
                    &got,
                    &want,
                    &format!("({n}, {c}) {layout:?} dropout {drop:?}"),
                );
                if drop.is_some() {
                    // The mask dropped some of the branch and kept some.
                    let base =
                        pollster::block_on(gpu.ctx.read_f32(&io.base, (n * c) as usize)).unwrap();
                    let kept = got[0].iter().zip(&base).filter(|(x, b)| x != b).count();
                    let all = (n * c) as usize;
                    assert!(
                        all < 8 || (kept > 0 && kept < all),
                        "({n}, {c}): {kept} of {all} kept"
                    );
                }
            }
        }
    }
}

fn same_bits(got: &Outputs, want: &Outputs, what: &str) {
    for (name, (g, w)) in ["x", "y", "mean", "rstd"].iter().zip(got.iter().zip(want)) {
        let differ = g
            .iter()
            .zip(w)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{what}: {differ} of {name} differ");
    }
}

/// On tensor cores both kernels write the LayerNorm output's f16 copy too
/// (`run` checks it against the staging): the outputs keep their bits.
/// Shapes with rows and channels past the staging's padding (128 rows,
/// 32 channels), one row of more than 128 channels.
#[test]
fn the_f16_copy_is_the_staged_output_and_changes_no_bit() {
    let gpu = gpu_or_skip!();
    if !has_shader_f16(gpu, "LayerNorm f16 copy") {
        return;
    }
    for (i, (n, c)) in [(7, 13), (130, 48), (5, 300)].into_iter().enumerate() {
        for layout in [Layout::Gpu, Layout::Cpu] {
            for drop in [None, Some(0.2)] {
                let off = if drop.is_some() { 0 } else { OFF };
                let io = upload(gpu, (n, c), off, 900 + i as u64);
                let desc = LayerNormDesc {
                    n,
                    c,
                    accumulate: false,
                    layout,
                };
                let want = run(gpu, (desc, off), &io, drop, (true, false));
                for fused in [false, true] {
                    let got = run(gpu, (desc, off), &io, drop, (fused, true));
                    let what = format!("({n}, {c}) {layout:?} dropout {drop:?} fused {fused}");
                    same_bits(&got, &want, &what);
                }
            }
        }
    }
}

#[test]
fn aliased_outputs_are_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (n, c) = (4, 8);
    let io = upload(gpu, (n, c), 0, 1);
    let out = ctx.zeros("out", (n * c) as usize).unwrap();
    let stats = ctx.zeros("stats", 2 * n as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let desc = LayerNormDesc {
        n,
        c,
        accumulate: false,
        layout: Layout::Gpu,
    };
    // The stream written over its own base.
    let add = ResidualAdd {
        base: View::at(&io.base, 0),
        branch: View::at(&io.branch, 0),
        drop: None,
        x: View::at(&io.base, 0),
    };
    let (w, b) = (View::at(&io.params, 0), View::at(&io.params, c));
    let outs = [View::at(&out, 0), View::at(&stats, 0), View::at(&stats, n)];
    let e = bind_layernorm_residual(ctx, &mut reg, desc, add, [w, b], outs, None);
    let e = e.err().expect("refused").to_string();
    assert!(e.contains("x (written) and base (read)"), "{e}");
    // w and b in two buffers: the kernel reads them through one binding.
    let stream = ctx.zeros("x", (n * c) as usize).unwrap();
    let add = ResidualAdd {
        x: View::at(&stream, 0),
        ..add
    };
    let apart = ctx.upload("b", &vec![0.0; c as usize]).unwrap();
    let ok = bind_layernorm_residual(ctx, &mut reg, desc, add, [w, b], outs, None);
    assert!(ok.is_ok(), "{:?}", ok.err());
    let e = bind_layernorm_residual(
        ctx,
        &mut reg,
        desc,
        add,
        [w, View::at(&apart, 0)],
        outs,
        None,
    );
    let e = e.err().expect("refused").to_string();
    assert!(e.contains("one buffer"), "{e}");
}
