//! Sampling with a KV cache: one token costs work proportional to the
//! context so far, and only what the sampler needs comes back.
//!
//! A step (one token at one position) runs in one of the layouts of
//! [`DecoderKernels`]. On a GPU the engine picks `Persistent` for a model
//! whose rows are at most 128 wide and fit its workgroup
//! ([`DecoderKernels::preferred_for`]): the whole token — every block,
//! the final LayerNorm and the tied head — in one kernel of one workgroup
//! per sample (`ops::persistent`, `shaders/decode_persistent.wgsl`), and
//! the pick in the same kernel where the device binds its storage buffers
//! (one dispatch a chained token; [`Decoder::set_pick_in_kernel`]), else
//! in its own (two). Wider models run `Prologue`:
//! per layer the QKV GEMV with the first LayerNorm in its prologue, the
//! attention (appending k and v to the layer's cache), the projection GEMV
//! adding into the residual row, the fc GEMV with the second LayerNorm
//! before and GELU after, the fc_proj GEMV adding into the residual row;
//! then the head GEMV with the final LayerNorm in its prologue and the
//! pick (`5·n_layer + 2` a chained token); where a token's GEMVs stream
//! enough weights (`layout::loads_ahead`) each attention dispatch also
//! loads the next four GEMVs' weights into L2 (`ops::ahead`). `Fused` and
//! `Stack` fold more
//! into fewer kernels and measured slower on the H100 (`bench --decoder`
//! times them); on a CPU implementation `Columns` runs the three
//! LayerNorms as dispatches of their own, and the GEMVs and the attention
//! without barriers. The pick (greedy, or seeded sampling with the host's
//! draw for the position) also writes the next step's input row (the
//! embedding of its pick at the next position), so a step chained after
//! another skips the embedding. A step that returns the logits (`push`)
//! ends with the head.
//!
//! The decoder keeps two residual rows: a step reads and adds into the one
//! of its parity, and its pick writes the next step's input row into the
//! other, so that the head kernel reads one and writes the other.
//!
//! Steps chain inside one submission. A prompt's steps each start with two
//! copies: the position from a table, the input token from the host's
//! list. After them, a step's input token is the one the previous step's
//! pick left, and so is its position: the decoder keeps two position
//! uniforms and binds every step's kernels twice, once reading each, and a
//! step's pick writes the position after its own into the other — so the
//! picked steps run back to back in one compute pass with no copy between
//! them. Decoding therefore submits many tokens at once and reads back
//! only their ids, greedy or sampled alike. A submission that continues
//! the one before (no host tokens, after a pick) starts the same way: its
//! first step reads the row and position the previous submission's last
//! pick wrote (`Decoder::next_parity`), so only a prompt's steps copy.
//!
//! A decoder decodes `batch` samples together (several continuations of
//! one prompt): every row buffer holds a row per sample, every kernel runs
//! its rows side by side in the same dispatch (each row's workgroups read
//! the weights themselves: one dispatch, not one weight stream, per op),
//! each sample has its own KV cache, and every sample sits at the same
//! position. A sample's bits do not depend on the
//! batch: each row is computed in the order a batch of one computes it.

mod layout;
mod profile;
mod rows;
mod steps;

pub use layout::DecoderKernels;

use super::builder::Flat;
use super::F16WeightCache;
use crate::buffers::PendingRead;
use crate::kernel::{record_pass, BoundKernel};
use crate::ops::argmax::{sample_params_words, Pick, PICK_BYTES};
use crate::ops::attention::{DecodeDesc, KvCache, Stack, POSITION_BYTES};
use crate::ops::persistent::persistent_cache;
use crate::profile::TimedPass;
use crate::{GpuContext, GpuError, PipelineRegistry};
use rows::{RowBuilder, Rows};
use steps::{bind_step, Records, Step};
use tinygpt_core::sample::SampleParams;
use tinygpt_core::ModelConfig;

/// What a step records after the blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    /// Nothing: a prompt token whose successor is known.
    None,
    /// The logits, for the host's sampler.
    Logits,
    /// The logits and the greedy pick.
    Pick,
    /// The logits and the seeded pick.
    Sample,
}

/// The row buffers (a row per sample), caches and bound kernels of
/// decoding.
pub struct Decoder {
    desc: DecodeDesc,
    /// The layout its kernels run in (the one asked for, or what
    /// [`DecoderKernels::for_model`] gives for it).
    layout: DecoderKernels,
    /// Samples decoded together.
    batch: usize,
    /// The embedding's input tokens (one per sample).
    token: wgpu::Buffer,
    /// Tokens the host gives one submission (`batch` a step), copied into
    /// `token` step by step.
    host_tokens: wgpu::Buffer,
    /// Row `p` holds position `p`, copied into `position[0]` before each
    /// prompt step (and a submission's first step, unless it continues a
    /// pick).
    positions: wgpu::Buffer,
    position: wgpu::Buffer,
    logits: wgpu::Buffer,
    /// The pick made at each position for each sample ([`PICK_BYTES`]
    /// each, position-major).
    picks: wgpu::Buffer,
    vocab: usize,
    /// The step reading `position[0]` and the step reading `position[1]`.
    steps: [Step; 2],
    /// The seeded pick's rule and one draw per position.
    sample_params: wgpu::Buffer,
    draws: wgpu::Buffer,
    _buffers: Vec<wgpu::Buffer>,
    _caches: Vec<KvCache>,
    /// Whether a persistent layout's step picks inside its kernel, where
    /// the device offers it (one dispatch a token); else the pick is a
    /// dispatch of its own.
    pick_in_kernel: bool,
    /// Where the last submission's last pick left the next step's input
    /// row and position: the parity of the step that reads them, so that a
    /// submission continuing from it starts without copies or an
    /// embedding. `None` after a reset, a step without a pick, or a
    /// profile.
    next_parity: Option<usize>,
    /// Tokens in the cache.
    pub len: usize,
}

/// Greedy picks on their way back (see [`Decoder::submit_greedy`]).
pub struct PendingPicks(PendingRead);

impl PendingPicks {
    /// Waits for the picks of their submission only.
    pub async fn finish(self, ctx: &GpuContext) -> Result<Vec<Pick>, GpuError> {
        Ok(Pick::parse(&self.0.finish(ctx).await?))
    }
}

impl Decoder {
    /// Binds a token step of `batch` samples in the `layout`, twice (one
    /// reading each position uniform), reading the `f16` weights when
    /// given and summing the GEMVs' lanes with subgroups of the given size
    /// when the subgroups fast path is on.
    pub fn new(
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        cfg: &ModelConfig,
        params: &Flat<'_>,
        f16: Option<&F16WeightCache>,
        (layout, batch, subgroups): (DecoderKernels, u32, Option<u32>),
    ) -> Result<Self, GpuError> {
        let (c, v, t_max) = (cfg.d_model as u32, cfg.vocab_size as u32, cfg.block_size);
        let rows_of = |n: usize| n * batch as usize;
        let desc = DecodeDesc {
            c,
            nh: cfg.n_head as u32,
            t_max: t_max as u32,
            batch,
        };
        let table: Vec<u32> = (0..desc.t_max).flat_map(|p| [p, 0, 0, 0]).collect();
        let positions = ctx.upload_bytes("decode_positions", bytemuck::cast_slice(&table))?;
        let host_tokens = ctx.zeros("decode_host_tokens", rows_of(t_max))?;
        let records = Records::new(ctx, v, rows_of(t_max))?;
        let layout = layout.for_model(&desc, &ctx.limits);
        let caches: Vec<KvCache> = match layout {
            DecoderKernels::Persistent | DecoderKernels::PersistentWide => {
                vec![persistent_cache(ctx, desc, cfg.n_layer as u32)?]
            }
            _ => (0..cfg.n_layer)
                .map(|_| KvCache::new(ctx, desc))
                .collect::<Result<_, _>>()?,
        };
        let slots = match layout {
            DecoderKernels::Stack => Stack::layer_slots(desc.nh),
            _ => 0,
        };
        let rows = Rows::new(ctx, (c as usize, v as usize), batch as usize, slots)?;
        let mut g = RowBuilder {
            ctx,
            reg,
            params,
            f16,
            layout,
            subgroups,
            desc,
            v,
            rows: &rows,
            parity: 0,
            kernels: Vec::new(),
        };
        let first = bind_step(&mut g, &caches, &records)?;
        g.parity = 1;
        let second = bind_step(&mut g, &caches, &records)?;
        let Rows {
            token,
            position: [position, other],
            logits,
            x: [x, x_next],
            qkv,
            atty,
            fch,
            xn,
            mean,
            rstd,
            stacks,
            ..
        } = rows;
        let Records {
            picks,
            sample_params,
            draws,
        } = records;
        Ok(Self {
            desc,
            layout,
            batch: batch as usize,
            token,
            host_tokens,
            positions,
            position,
            logits,
            picks,
            vocab: v as usize,
            steps: [first, second],
            sample_params,
            draws,
            _buffers: [other, x, x_next, qkv, atty, fch, xn, mean, rstd]
                .into_iter()
                .chain(stacks)
                .collect(),
            _caches: caches,
            pick_in_kernel: true,
            next_parity: None,
            len: 0,
        })
    }

    /// Capacity of the cache (the model's context).
    pub fn capacity(&self) -> usize {
        self.desc.t_max as usize
    }

    /// Whether a persistent layout's step picks inside its kernel (the
    /// default, where the device offers it) or in a dispatch of its own;
    /// the same tokens either way (`tests/decode_persistent.rs`).
    pub fn set_pick_in_kernel(&mut self, on: bool) {
        self.pick_in_kernel = on;
    }

    /// The layout its kernels run in.
    pub fn layout(&self) -> DecoderKernels {
        self.layout
    }

    /// Samples decoded together.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Dispatches of a greedy token step chained after another (no
    /// embedding: the previous pick wrote the input row).
    pub fn dispatches_per_token(&self) -> usize {
        self.kernels(0, Out::Pick, false).len()
    }

    /// Forgets the cached context.
    pub fn reset(&mut self) {
        self.len = 0;
        self.next_parity = None;
    }

    /// Appends `token` at the next position (of every sample) and returns
    /// the logits (V per sample) of the next token. Errors when the cache
    /// is full.
    pub async fn push(&mut self, ctx: &GpuContext, token: u32) -> Result<Vec<f32>, GpuError> {
        self.submit(ctx, &vec![token; self.batch], 1, Out::Logits, None)?;
        ctx.read_f32(&self.logits, self.vocab * self.batch).await
    }

    /// Appends `token` without computing the logits (prompt prefill).
    pub fn feed(&mut self, ctx: &GpuContext, token: u32) -> Result<(), GpuError> {
        self.submit(ctx, &vec![token; self.batch], 1, Out::None, None)?;
        Ok(())
    }

    /// Greedy decoding of `picks` (≥ 1) tokens in one submission, without
    /// waiting: appends the `host` tokens (a prompt, `batch` tokens a step:
    /// one per sample; the successor of its last step is the first pick) —
    /// or, when `host` is empty, the last picks of the previous submission,
    /// still in the token buffer — then each pick in turn. Returns the read
    /// of the picked ids, position by position, a sample's after another's.
    /// A next submission may follow before this read is awaited.
    pub fn submit_greedy(
        &mut self,
        ctx: &GpuContext,
        host: &[u32],
        picks: usize,
    ) -> Result<PendingPicks, GpuError> {
        self.submit_picks(ctx, host, picks, None)
    }

    /// [`Self::submit_greedy`], or with `sampling` the seeded pick: its
    /// rule's parameters, and one draw per pick and sample
    /// (`draws.len() == picks · batch`, in the picks' order).
    pub fn submit_picks(
        &mut self,
        ctx: &GpuContext,
        host: &[u32],
        picks: usize,
        sampling: Option<(&SampleParams, &[f32])>,
    ) -> Result<PendingPicks, GpuError> {
        if picks == 0 {
            return Err(self.shape("a submission picks at least one token".into()));
        }
        if !host.len().is_multiple_of(self.batch) {
            return Err(self.shape(format!(
                "{} host tokens for {} samples",
                host.len(),
                self.batch
            )));
        }
        let steps = (host.len() / self.batch).max(1) + picks - 1;
        let first = (self.len + steps - picks) * self.batch;
        let out = match sampling {
            None => Out::Pick,
            Some((params, draws)) => {
                if draws.len() != picks * self.batch {
                    return Err(self.shape(format!(
                        "{} draws for {picks} picks of {} samples",
                        draws.len(),
                        self.batch
                    )));
                }
                self.check_room(steps)?;
                let words = sample_params_words(self.vocab as u32, 0, params);
                ctx.queue
                    .write_buffer(&self.sample_params, 0, bytemuck::cast_slice(&words));
                ctx.queue
                    .write_buffer(&self.draws, 4 * first as u64, bytemuck::cast_slice(draws));
                Out::Sample
            }
        };
        let (at, len) = (
            PICK_BYTES * first as u64,
            PICK_BYTES * (picks * self.batch) as u64,
        );
        let read = self.submit(ctx, host, steps, out, Some((at, len)))?;
        let read = read.ok_or_else(|| self.shape("no read of the picks".into()))?;
        Ok(PendingPicks(read))
    }

    /// Submits `steps` steps at the next positions: the `host` tokens
    /// (`batch` a step), then (greedy) the tokens the picks leave. Every
    /// step records the blocks; those from the last host step on also
    /// record `out`. The steps after the first and the prompt's read the
    /// position the previous step's pick wrote: one pass, no copies — and
    /// so does the first, when there are no host tokens and the previous
    /// submission ended with a pick. With `read` (an offset and a length
    /// in the picks), the copy of those picks goes into the same
    /// submission, and their read starts.
    fn submit(
        &mut self,
        ctx: &GpuContext,
        host: &[u32],
        steps: usize,
        out: Out,
        read: Option<(u64, u64)>,
    ) -> Result<Option<PendingRead>, GpuError> {
        self.check_room(steps)?;
        let host_steps = host.len() / self.batch;
        if !host.is_empty() {
            ctx.queue
                .write_buffer(&self.host_tokens, 0, bytemuck::cast_slice(host));
        }
        let picks = matches!(out, Out::Pick | Out::Sample);
        let from = self.next_parity.filter(|_| host.is_empty() && picks);
        let mut enc = encoder(ctx);
        let next = self.record_steps(&mut enc, (host_steps, steps), out, (None, from));
        let staged = read.map(|(at, len)| ctx.stage_read(&mut enc, &[(&self.picks, at, len)]));
        let index = ctx.queue.submit([enc.finish()]);
        self.len += steps;
        self.next_parity = picks.then_some(next);
        Ok(staged.map(|s| s.map(index)))
    }

    /// Records `steps` steps, the first `host_steps` from the host's
    /// tokens: each step that starts with copies in a pass of its own,
    /// then the chained ones in one pass (timed by `timer` when given) —
    /// all of them chained, the first reading parity `from`'s input row
    /// and position, when `from` is given (a previous pick wrote them).
    /// Returns the parity of the step after the last.
    fn record_steps(
        &self,
        enc: &mut wgpu::CommandEncoder,
        (host_steps, steps): (usize, usize),
        out: Out,
        (timer, from): (Option<&TimedPass>, Option<usize>),
    ) -> usize {
        // Steps that start with copies: each reads `position[0]`, and its
        // pick (the last one's) writes the input of a step of parity 1.
        let copied = match (out, from) {
            (Out::Pick | Out::Sample, Some(_)) => 0,
            (Out::Pick | Out::Sample, None) => host_steps.max(1).min(steps),
            (Out::None | Out::Logits, _) => steps,
        };
        let first = from.unwrap_or(1);
        for i in 0..copied {
            self.start_step(enc, i, host_steps);
            let kernels = self.kernels(0, if i + 1 < host_steps { Out::None } else { out }, true);
            record_pass(enc, "decode", &kernels);
        }
        let chained: Vec<&BoundKernel> = (copied..steps)
            .flat_map(|i| self.kernels((first + i - copied) % 2, out, false))
            .collect();
        match timer {
            Some(timer) => timer.record(enc, "decode", &chained),
            None if !chained.is_empty() => record_pass(enc, "decode", &chained),
            None => {}
        }
        (first + steps - copied) % 2
    }

    /// Records the copies that start step `i` of a submission: its position
    /// (`len + i`, into `position[0]`), and host step `i`'s tokens when
    /// there is one.
    fn start_step(&self, enc: &mut wgpu::CommandEncoder, i: usize, host_steps: usize) {
        let row = 4 * self.batch as u64;
        if i < host_steps {
            enc.copy_buffer_to_buffer(&self.host_tokens, row * i as u64, &self.token, 0, row);
        }
        let at = POSITION_BYTES * (self.len + i) as u64;
        enc.copy_buffer_to_buffer(&self.positions, at, &self.position, 0, POSITION_BYTES);
    }

    /// The dispatches of one step reading position uniform `parity`, from
    /// the embedding of the host's token or (`embed` false) from the input
    /// row the previous step's pick wrote.
    fn kernels(&self, parity: usize, out: Out, embed: bool) -> Vec<&BoundKernel> {
        let step = &self.steps[parity];
        let embedding = embed.then_some(&step.embedding);
        let whole = match (out, &step.token_pick) {
            (Out::Pick, Some([greedy, _])) if self.pick_in_kernel => Some(greedy),
            (Out::Sample, Some([_, sample])) if self.pick_in_kernel => Some(sample),
            _ => None,
        };
        if let Some(whole) = whole {
            return embedding.into_iter().chain([whole]).collect();
        }
        let mut k: Vec<&BoundKernel> = embedding.into_iter().chain(&step.blocks).collect();
        match (out, &step.head_pick) {
            (Out::None, _) => {}
            (Out::Pick, Some([greedy, _])) => k.push(greedy),
            (Out::Sample, Some([_, sample])) => k.push(sample),
            (Out::Logits, _) => k.extend(&step.head),
            (Out::Pick, None) => k.extend(step.head.iter().chain([&step.pick])),
            (Out::Sample, None) => k.extend(step.head.iter().chain([&step.sample])),
        }
        k
    }

    fn check_room(&self, steps: usize) -> Result<(), GpuError> {
        if self.len + steps > self.capacity() {
            return Err(self.shape(format!(
                "{steps} more tokens do not fit: {} of {} positions are taken",
                self.len,
                self.capacity()
            )));
        }
        Ok(())
    }

    fn shape(&self, detail: String) -> GpuError {
        GpuError::Shape {
            op: "decoder",
            detail,
        }
    }
}

fn encoder(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("decode"),
        })
}
