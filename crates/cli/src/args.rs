//! Command-line arguments.

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use tinygpt_gpu::model::DecoderKernels;
use tinygpt_gpu::ops::matmul::coop::CoopKernel;

/// Train and sample a small character-level GPT on your GPU.
#[derive(Parser, Debug)]
#[command(name = "tinygpt", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Build the GPU pipelines with wgpu's shader checks (`full`), with
    /// none (`none`, the default: the kernels are the engine's own), or
    /// with all but those named (a comma list of `bounds`, `loops`, `div`,
    /// `zero`: index clamps, loop counters, division guards, workgroup
    /// memory zeroed at start).
    #[arg(long, global = true, default_value = "none")]
    pub shader_checks: String,
    /// Whether the tensor-core training path runs its attention on tensor
    /// cores too (the forward's two products and the backward's five on
    /// f16 tiles, the gradients scaled, f32 sums), where the device runs
    /// those kernels and the heads (16, 32, 48 or 64 dims) fit them. The
    /// tensor-core gate checks it; `off` keeps the attention f32.
    #[arg(long, global = true, default_value = "on", value_parser = ["on", "off"])]
    pub coop_attention: String,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train a model (from scratch or resumed from a checkpoint).
    Train(Box<TrainArgs>),
    /// Generate text from a checkpoint, streaming it to stdout.
    Sample(SampleArgs),
    /// Validation loss (nats/char) of a checkpoint on a corpus.
    Eval(EvalArgs),
    /// Print the GPU adapter this machine offers.
    Info,
    /// Benchmark training, sampling and matmuls; prints one JSON document.
    Bench(BenchArgs),
    /// Run every fast path's precision gate on this GPU (docs/precision.md).
    Gate(GateArgs),
}

#[derive(Args, Debug)]
pub struct Backend {
    /// Run on the CPU reference instead of the GPU.
    #[arg(long)]
    pub cpu: bool,
}

#[derive(Args, Debug)]
pub struct TrainArgs {
    /// Model preset: nano, tiny, small, nanogpt, large.
    #[arg(long, default_value = "nano")]
    pub preset: String,
    /// Override the preset's layers.
    #[arg(long)]
    pub n_layer: Option<usize>,
    /// Override the preset's heads.
    #[arg(long)]
    pub n_head: Option<usize>,
    /// Override the preset's d_model.
    #[arg(long)]
    pub d_model: Option<usize>,
    /// Override the preset's context length.
    #[arg(long)]
    pub block_size: Option<usize>,
    /// Training corpus (UTF-8 text).
    #[arg(long, default_value = "web/corpus/shakespeare.txt")]
    pub corpus: PathBuf,
    /// Share of the corpus (its tail) held out for validation.
    #[arg(long, default_value_t = 0.1)]
    pub val_fraction: f64,
    /// Optimiser steps to run (in total, counting a resumed checkpoint's).
    #[arg(long)]
    pub steps: Option<usize>,
    /// Sequences per optimiser step.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Characters per training sequence (at most the context length).
    #[arg(long)]
    pub seq_len: Option<usize>,
    /// Peak learning rate (AdamW), reached after the warm-up.
    #[arg(long)]
    pub lr: Option<f32>,
    /// Learning rate at the end of the cosine decay.
    #[arg(long)]
    pub min_lr: Option<f32>,
    /// Steps of linear warm-up from 0 to the peak learning rate.
    #[arg(long)]
    pub warmup_steps: Option<usize>,
    /// AdamW's decoupled weight decay (on the embeddings and linear weights; not on biases or LayerNorm gains).
    #[arg(long)]
    pub weight_decay: Option<f32>,
    /// Clip the global gradient norm to this (0: no clipping).
    #[arg(long)]
    pub grad_clip: Option<f32>,
    /// Dropout rate on the embedding and each residual branch (0: off).
    #[arg(long)]
    pub dropout: Option<f32>,
    /// Report the validation loss every N steps (0: never).
    #[arg(long)]
    pub eval_interval: Option<usize>,
    /// Validation batches averaged per report.
    #[arg(long)]
    pub eval_batches: Option<usize>,
    /// Seed of the initial weights, the batches and the dropout masks.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Resume from this checkpoint (weights, AdamW moments, step).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Where to write the checkpoint.
    #[arg(long, default_value = "tinygpt.safetensors")]
    pub out: PathBuf,
    /// Also checkpoint every N steps (0: only at the end).
    #[arg(long, default_value_t = 0)]
    pub save_every: usize,
    /// Store weights as f16 (no AdamW moments: for shipping, not resuming).
    #[arg(long)]
    pub f16: bool,
    /// One JSON object per report on stdout instead of a progress bar.
    #[arg(long)]
    pub json: bool,
    /// Gate the fast paths first (precision, then speed at this model's
    /// shape; the tensor-core path also trains 200 steps against f32) and
    /// train on those that pass; without it training is f32.
    #[arg(long)]
    pub fast_paths: bool,
    #[command(flatten)]
    pub backend: Backend,
}

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// A checkpoint written by `tinygpt train` (f32 or f16 safetensors).
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Text the sample continues (characters of the model's vocabulary).
    #[arg(long, default_value = "\n")]
    pub prompt: String,
    /// Characters to generate.
    #[arg(long, default_value_t = 500)]
    pub length: usize,
    /// 0 is greedy.
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f32,
    /// Sample among the k most likely characters only.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Sample among the most likely characters whose probabilities sum to p (nucleus).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Seed of the sampler (the same seed gives the same text).
    #[arg(long, default_value_t = 1337)]
    pub seed: u64,
    /// Continuations of the prompt decoded together (1 to 8; sample i
    /// draws with seed + i), printed one after another.
    #[arg(long, default_value_t = 1)]
    pub num_samples: usize,
    #[command(flatten)]
    pub backend: Backend,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// A checkpoint written by `tinygpt train` (f32 or f16 safetensors).
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Corpus (UTF-8 text) whose held-out tail is evaluated.
    #[arg(long, default_value = "web/corpus/shakespeare.txt")]
    pub corpus: PathBuf,
    /// Share of the corpus (its tail) held out for validation.
    #[arg(long, default_value_t = 0.1)]
    pub val_fraction: f64,
    /// Validation batches to average.
    #[arg(long, default_value_t = 50)]
    pub batches: usize,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: Backend,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Tiny shapes and few iterations (a smoke run, e.g. on lavapipe).
    #[arg(long)]
    pub quick: bool,
    /// Instead: the GPU time of every dispatch of one training step per
    /// shape and of one decoded token, summed per kernel (needs timestamp
    /// queries).
    #[arg(long)]
    pub profile: bool,
    /// Only this model shape (`tiny`, `small` or `nanogpt`): training and
    /// sampling, or the profile, of that shape alone (matmuls skipped); or
    /// `matmuls`: the matmul rows alone (not with `--profile`).
    #[arg(long, value_parser = ["tiny", "small", "nanogpt", "matmuls"])]
    pub shape: Option<String>,
    /// The attention kernels' rows alone (each shape's, or `--shape`'s):
    /// no training, sampling or matmul rows.
    #[arg(long, conflicts_with = "profile")]
    pub attention_only: bool,
    /// With `--profile`: the decoded token only, no training step (a
    /// training step of `small` takes minutes on a CPU implementation).
    #[arg(long, requires = "profile")]
    pub decode_only: bool,
    /// With `--profile`: the driver's statistics of every pipeline the
    /// profile compiled (registers a lane, spills, …; Vulkan drivers with
    /// VK_KHR_pipeline_executable_properties), as `pipeline_stats`.
    #[arg(long, requires = "profile")]
    pub pipeline_stats: bool,
    /// Sample (and, with `--profile`, profile) on the decoder laid out this
    /// way instead of the device's way (`columns` on a CPU implementation,
    /// `prologue` on a GPU) — e.g. `fused` on a GPU to time its one kernel
    /// a head, or `prologue` on lavapipe to time the lanes' subgroup sums.
    #[arg(long, value_parser = PossibleValuesParser::new(DecoderKernels::ALL.map(DecoderKernels::name)))]
    pub decoder: Option<String>,
    /// Sample and profile the persistent layouts with the pick in a
    /// dispatch of its own (the engine picks inside their kernel where the
    /// device offers it: one dispatch a token).
    #[arg(long)]
    pub pick_apart: bool,
    /// Run the tensor-core training path's products (and the profile's)
    /// on this kernel instead of the engine's `tiled-ahead3` (the matmul rows time
    /// every kernel regardless).
    #[arg(long, value_parser = PossibleValuesParser::new(CoopKernel::ALL.map(CoopKernel::name)))]
    pub coop_kernel: Option<String>,
}

#[derive(Args, Debug)]
pub struct GateArgs {
    /// Also gate on this model: its vocabulary as the K=vocab shape, its
    /// weight matrices with real activations, and 100 greedy tokens on f32
    /// versus the fast path.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Prompt of the sample gate (characters of the model's vocabulary).
    #[arg(long, default_value = "ROMEO:\n")]
    pub prompt: String,
    /// Test only: inject a faulty kernel (f16acc, droptail, trunc) to see
    /// the gate reject it.
    #[arg(long, hide = true)]
    pub fault: Option<String>,
    /// The speed gate (`on`: a path that passes on precision activates only
    /// if it is faster than f32 here; `off`: precision alone decides).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub speed_gate: String,
    /// One JSON array of gate reports on stdout instead of the lines.
    #[arg(long)]
    pub json: bool,
    /// With --checkpoint: run the prompt on f32 and on each fast path
    /// (whether or not its gate passed), compare every stage of the forward
    /// and name the first whose error jumps (docs/precision.md).
    #[arg(long)]
    pub localize: bool,
    /// With --localize: teacher-force this text (its first 1,000 characters
    /// in the model's vocabulary) through the KV-cache decoder on f32 and
    /// on the fast path, and report the logits' drift by cache depth.
    #[arg(long)]
    pub text: Option<PathBuf>,
}
