//! The decoder's final LayerNorm, tied head and pick in one kernel
//! (`shaders/decode_head.wgsl`) against the LayerNorm-prologue head GEMV
//! followed by the pick on its own, greedy and seeded: the logits bit for
//! bit, and the same token, record, next position and next input row, for
//! one to three rows, vocabularies of one to four passes of 32 columns (the
//! largest the decoder fuses), and rows under, past and at whole rounds of
//! 256 inputs (up to the widest staged, 1,024). Then the refusals.

use tinygpt_core::sample::SampleParams;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::argmax::{
    bind_greedy_pick, bind_head_pick, bind_sample_pick, head_pick_offered, sample_params_words,
    Head, NextInput, Records, Rule, HEAD_PICK_MAX_V,
};
use tinygpt_gpu::ops::attention::{decode_position_buffer, DECODE_QKV_MAX_C};
use tinygpt_gpu::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{random_in, TestGpu};
use tinygpt_gpu::{GpuContext, PipelineRegistry};

/// (V, C, rows).
const SHAPES: [(u32, u32, u32); 4] = [
    (11, 20, 1),
    (65, 384, 2),
    (HEAD_PICK_MAX_V, 48, 3),
    (65, DECODE_QKV_MAX_C, 1),
];
const T_MAX: u32 = 8;
const AT: u32 = 3;

/// The flat parameters a head reads, at odd offsets in one buffer: the
/// final LayerNorm's weight and bias, tok_emb and pos_emb.
struct Flat {
    buf: wgpu::Buffer,
    at: [u32; 4],
}

impl Flat {
    fn new(ctx: &GpuContext, (v, c): (u32, u32), rng: &mut Rng) -> Self {
        let (v, c) = (v as usize, c as usize);
        let parts = [
            random_in(rng, c, 0.5, 1.5),
            random_in(rng, c, -0.2, 0.2),
            random_in(rng, v * c, -0.5, 0.5),
            random_in(rng, T_MAX as usize * c, -0.5, 0.5),
        ];
        let mut flat = vec![0.5_f32; 3];
        let mut at = [0; 4];
        for (i, part) in parts.iter().enumerate() {
            at[i] = flat.len() as u32;
            flat.extend(part);
        }
        Self {
            buf: ctx.upload("flat", &flat).unwrap(),
            at,
        }
    }

    fn view(&self, i: usize) -> View<'_> {
        View::at(&self.buf, self.at[i])
    }
}

/// One path's outputs: logits, token, records, next position, next input.
struct Outs {
    bufs: [wgpu::Buffer; 5],
    position: wgpu::Buffer,
}

impl Outs {
    fn new(ctx: &GpuContext, (v, c, rows): (u32, u32, u32)) -> Self {
        let n = |k: u32| (k * rows) as usize;
        let position = decode_position_buffer(ctx);
        ctx.queue.write_buffer(&position, 0, &AT.to_le_bytes());
        Self {
            bufs: [
                ctx.zeros("logits", n(v)).unwrap(),
                ctx.zeros("token", n(1)).unwrap(),
                ctx.zeros("picks", n(4 * T_MAX)).unwrap(),
                decode_position_buffer(ctx),
                ctx.zeros("next_x", n(c)).unwrap(),
            ],
            position,
        }
    }

    fn records(&self) -> Records<'_> {
        Records {
            positions: (&self.position, &self.bufs[3]),
            token: &self.bufs[1],
            picks: &self.bufs[2],
        }
    }

    fn next<'a>(&'a self, flat: &'a Flat, c: u32) -> NextInput<'a> {
        NextInput {
            tok_emb: flat.view(2),
            pos_emb: flat.view(3),
            x: &self.bufs[4],
            c,
            t_max: T_MAX,
        }
    }

    fn bits(&self, ctx: &GpuContext) -> Vec<Vec<u32>> {
        let read = |b: &wgpu::Buffer| pollster::block_on(ctx.read_bytes(b, b.size())).unwrap();
        self.bufs
            .iter()
            .map(|b| bytemuck::cast_slice(&read(b)).to_vec())
            .collect()
    }
}

/// The rule's buffers: its uniform and a draw per record.
fn rule_buffers(
    ctx: &GpuContext,
    v: u32,
    rows: u32,
    rng: &mut Rng,
) -> (wgpu::Buffer, wgpu::Buffer) {
    let rule = SampleParams {
        temperature: 1.3,
        top_k: Some(20),
        top_p: Some(0.9),
        seed: 5,
    };
    let words = sample_params_words(v, 0, &rule);
    let draws = random_in(rng, (T_MAX * rows) as usize, 0.0, 1.0);
    (
        ctx.uniform("rule", bytemuck::cast_slice(&words)),
        ctx.upload("draws", &draws).unwrap(),
    )
}

/// The head GEMV and the pick on their own.
fn separate(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    (v, c, rows): (u32, u32, u32),
    (flat, x, o): (&Flat, &wgpu::Buffer, &Outs),
    rule: Rule<'_>,
) -> Vec<BoundKernel> {
    let ctx = &gpu.ctx;
    let desc = MatmulDesc {
        m: rows,
        k: c,
        n: v,
        trans_b: true,
        ..Default::default()
    };
    let fusion = RowFusion {
        layernorm: Some((flat.view(0), flat.view(1))),
        ..RowFusion::default()
    };
    let logits = &o.bufs[0];
    let head = bind_gemv(ctx, reg, desc, x, flat.view(2), None, fusion, logits).unwrap();
    let r = o.records();
    let pick = match rule {
        Rule::Greedy => bind_greedy_pick(
            ctx,
            reg,
            (v, rows),
            logits,
            r.positions,
            r.token,
            r.picks,
            o.next(flat, c),
        ),
        Rule::Sample { params, draws } => bind_sample_pick(
            ctx,
            reg,
            (v, rows),
            logits,
            params,
            r.positions,
            r.token,
            r.picks,
            draws,
            o.next(flat, c),
        ),
    };
    vec![head, pick.unwrap()]
}

/// Whether the device binds the fused head's storage buffers; says the
/// test did not run where it does not.
fn offered(gpu: &TestGpu) -> bool {
    let yes = head_pick_offered(&gpu.ctx);
    if !yes {
        let why = "the device binds fewer storage buffers than the fused head";
        tinygpt_gpu::testing::did_not_run("fused head", why);
    }
    yes
}

#[test]
fn one_kernel_gives_the_head_gemv_and_the_picks_bits() {
    let gpu = gpu_or_skip!();
    if !offered(gpu) {
        return;
    }
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for (i, (v, c, rows)) in SHAPES.into_iter().enumerate() {
        let mut rng = Rng::new(30 + i as u64);
        let flat = Flat::new(ctx, (v, c), &mut rng);
        let x = ctx
            .upload("x", &random_in(&mut rng, (rows * c) as usize, -0.5, 1.5))
            .unwrap();
        let (params, draws) = rule_buffers(ctx, v, rows, &mut rng);
        for rule in [
            Rule::Greedy,
            Rule::Sample {
                params: &params,
                draws: &draws,
            },
        ] {
            let (a, b) = (Outs::new(ctx, (v, c, rows)), Outs::new(ctx, (v, c, rows)));
            let ks = separate(gpu, &mut reg, (v, c, rows), (&flat, &x, &a), rule);
            submit(ctx, "separate", &ks.iter().collect::<Vec<_>>());
            let head = Head {
                x: &x,
                ln: (flat.view(0), flat.view(1)),
                tok_emb: flat.view(2),
                logits: &b.bufs[0],
                c,
            };
            let fused = bind_head_pick(
                ctx,
                &mut reg,
                (rule, v, rows),
                head,
                b.records(),
                b.next(&flat, c),
            )
            .unwrap();
            submit(ctx, "fused", &[&fused]);
            let names = ["logits", "token", "picks", "next position", "next input"];
            for ((want, got), name) in a.bits(ctx).iter().zip(b.bits(ctx)).zip(names) {
                assert_eq!(&got, want, "V {v} C {c} rows {rows} {rule:?}: {name}");
            }
        }
    }
}

#[test]
fn the_fused_head_refuses_wide_vocabularies_and_shared_rows() {
    let gpu = gpu_or_skip!();
    if !offered(gpu) {
        return;
    }
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut rng = Rng::new(3);
    let (v, c) = (HEAD_PICK_MAX_V + 1, 20);
    let flat = Flat::new(ctx, (v, c), &mut rng);
    let x = ctx.zeros("x", c as usize).unwrap();
    let o = Outs::new(ctx, (v, c, 1));
    let head = || Head {
        x: &x,
        ln: (flat.view(0), flat.view(1)),
        tok_emb: flat.view(2),
        logits: &o.bufs[0],
        c,
    };
    let mut bind = |v: u32, next: NextInput<'_>| {
        bind_head_pick(
            ctx,
            &mut reg,
            (Rule::Greedy, v, 1),
            head(),
            o.records(),
            next,
        )
        .map(|_| ())
    };
    let err = bind(v, o.next(&flat, c)).unwrap_err().to_string();
    assert!(err.contains("V ≤ 128"), "{err}");
    assert!(bind(v - 1, o.next(&flat, c)).is_ok());
    let same = NextInput {
        x: &x,
        ..o.next(&flat, c)
    };
    let err = bind(v - 1, same).unwrap_err().to_string();
    assert!(err.contains("share a buffer"), "{err}");
}
