//! What a training run allocates on the GPU, computed before allocating.
//!
//! The UI shows this estimate and the worker refuses a run that exceeds the
//! device's limits or the memory budget with it; a native test checks that
//! the engine's real allocation equals it byte for byte.

use crate::ModelConfig;
use serde::{Deserialize, Serialize};

/// GPU memory a training run may use in the playground. WebGPU does not say
/// how much memory a device has; a run above this is refused before any
/// allocation, so a laptop GPU is never driven into a device loss.
pub const MEMORY_BUDGET_BYTES: u64 = 4 << 30;

/// Steps of (loss, gradient norm) the engine's step log holds.
pub const STEP_LOG_CAPACITY: u64 = 4096;

/// Bytes of one training run at `B × T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// Weights, gradients, both AdamW moments, the decay mask, optimiser
    /// counters and the step log.
    pub state_bytes: u64,
    /// Activations and backward scratch of one `B × T` batch.
    pub activation_bytes: u64,
    /// The largest single buffer, which must fit the device's
    /// `maxStorageBufferBindingSize` and `maxBufferSize`.
    pub largest_buffer_bytes: u64,
    /// Its name, for the refusal message.
    pub largest_buffer: &'static str,
}

impl MemoryPlan {
    pub fn total(&self) -> u64 {
        self.state_bytes + self.activation_bytes
    }
}

/// Output tile edge of the engine's general f32 matmul kernel.
pub const MATMUL_TILE: u32 = 64;
/// Output tile edge of its small-output kernel.
pub const MATMUL_TILE_SMALL: u32 = 32;
/// Fewest 64×64 tiles for which an output runs on the general kernel: about
/// one per SM of a 132-SM GPU. Below that the small-output kernel's four
/// times as many workgroups (each summing K in four groups of threads) keep
/// more of the GPU busy.
pub const SMALL_OUTPUT_MAX_TILES: u32 = 128;
/// Workgroups a K-split matmul aims for with 64×64 tiles: about four per SM
/// of a 132-SM GPU.
pub const SPLIT_TARGET_WORKGROUPS: u32 = 512;
/// The same with the small-output kernel: about two per SM. (On the H200,
/// at the tiny preset's weight gradients, more slices than that cost more
/// in their sum than they save.)
pub const SPLIT_TARGET_WORKGROUPS_SMALL: u32 = 256;
/// Fewest K per slice of a K-split matmul.
pub const SPLIT_MIN_K: u32 = 128;
/// Output tile edge of the tensor-core matmul (its tiled kernel).
pub const COOP_TILE: u32 = 128;
/// Most workgroups a K-split tensor-core matmul runs: one wave of two
/// 128×128 workgroups an SM on a 132-SM GPU. (The H200, runs 65–67:
/// nanoGPT's weight gradients at 135–144 workgroups, capped by a scratch
/// sized for the f32 split, ran 248 µs a call; at 243–252, 151; at
/// 261–288, the last few in a second wave, the step 1 ms slower than that.)
pub const COOP_SPLIT_WORKGROUPS: u32 = 256;
/// Fewest K per slice of a K-split tensor-core matmul filling its wave:
/// sixteen of its 32-wide blocks to a 64 KiB partial tile. Half of it where
/// only half a wave is filled ([`coop_split_k`]).
pub const COOP_SPLIT_MIN_K: u32 = 512;

/// K slices of an `m × n` output summed over `k` on the tensor-core
/// kernel (1: not split): as many as fill at most [`COOP_SPLIT_WORKGROUPS`]
/// workgroups of 128×128 tiles with slices of at least
/// [`COOP_SPLIT_MIN_K`]; where those fill less than half of that, as many
/// as fill half with slices of at least half as long. (The `small`
/// preset's weight gradients, K = 4096, measured on the H200 in runs 66
/// and 67: its QKV's and projection's 96 and 32 workgroups of 512 ran the
/// step 1.3 % slower than 132 and 64 of 256–372, and 256 of 256 for the
/// MLP's 4 % slower than 128 of 512.) The rule serves every product of
/// the graph: `small`'s 64-tile products of K ≥ 768 (its MLP's second
/// product, its QKV's and MLP's dX) run in two slices, the step 3 % faster
/// (run 70). Outputs of more tiles than half a wave are not split: two
/// slices of nanoGPT's 384-wide products (384 workgroups, their last wave
/// half empty) made its step 5 % slower in the same run, their sums
/// costing more than the fuller wave saved.
pub fn coop_split_k(m: u32, k: u32, n: u32) -> u32 {
    let tiles = (m.div_ceil(COOP_TILE) * n.div_ceil(COOP_TILE)).max(1);
    let (wave, min_k) = (COOP_SPLIT_WORKGROUPS, COOP_SPLIT_MIN_K);
    let full = (wave / tiles).min(k / min_k);
    let half = ((wave / 2) / tiles).min(k / (min_k / 2));
    match tiles * full < wave / 2 {
        true => full.max(half).max(1),
        false => full.max(1),
    }
}

/// Whether the engine computes an `m × n` output with the small-output
/// kernel (32×32 tiles) rather than the general one (64×64).
pub fn uses_small_tiles(m: u32, n: u32) -> bool {
    m.div_ceil(MATMUL_TILE) * n.div_ceil(MATMUL_TILE) < SMALL_OUTPUT_MAX_TILES
}

/// How the engine splits an `m × n` output summed over `k` along K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitK {
    /// Partial products on the small-output kernel (32×32 tiles) rather
    /// than the 64×64 one.
    pub small_tiles: bool,
    /// K slices (1: not split), each at least [`SPLIT_MIN_K`] long.
    pub slices: u32,
}

/// The engine's split of an `m × n` output summed over `k`: 64×64 tiles in
/// enough slices to fill a large GPU with workgroups when K is long enough
/// for that; otherwise, for an output small enough
/// ([`uses_small_tiles`]), the small-output kernel's four times as many
/// workgroups in fewer slices. The rule lives here, beside the memory plan,
/// because the plan counts the scratch the slices need and this crate
/// cannot see the engine.
pub fn split_k(m: u32, k: u32, n: u32) -> SplitK {
    let slices = |tile: u32, target: u32| {
        let tiles = (m.div_ceil(tile) * n.div_ceil(tile)).max(1);
        let slices = target.div_ceil(tiles).min(k / SPLIT_MIN_K).max(1);
        (tiles * slices, slices)
    };
    let (workgroups, general) = slices(MATMUL_TILE, SPLIT_TARGET_WORKGROUPS);
    if workgroups >= SPLIT_TARGET_WORKGROUPS || !uses_small_tiles(m, n) {
        return SplitK {
            small_tiles: false,
            slices: general,
        };
    }
    SplitK {
        small_tiles: true,
        slices: slices(MATMUL_TILE_SMALL, SPLIT_TARGET_WORKGROUPS_SMALL).1,
    }
}

/// Floats of the one scratch every K-split weight gradient `dW (out, in) =
/// Σ_rows dyᵀ·x` of a training step shares (they run one after another):
/// the largest `slices × (out × in + out)` among the tied head's and each
/// block's four linears (the `out` row sums are the bias gradient's
/// partials), with the f32 kernels' slices or the tensor-core kernel's,
/// whichever need more (the tensor-core path activates after a gate, on
/// the same buffers) — and the tensor-core products of `B·T` rows that
/// [`coop_split_k`] splits (a linear's, its dX's, the head's), which
/// share it too; 0 when none is split.
pub fn split_k_scratch_floats(cfg: &ModelConfig, rows: usize) -> u64 {
    let (c, v, rows) = (cfg.d_model as u32, cfg.vocab_size as u32, rows as u32);
    let linears = [(v, c), (3 * c, c), (c, c), (4 * c, c), (c, 4 * c)];
    let weight_grads = linears.into_iter().map(|(out, inp)| {
        let slices = split_k(out, rows, inp).slices;
        (
            slices.max(coop_split_k(out, rows, inp)),
            out as u64 * (inp as u64 + 1),
        )
    });
    // A linear's product (K = in, N = out) and its dX (K = out, N = in).
    let products = linears
        .into_iter()
        .flat_map(|(out, inp)| [(inp, out), (out, inp)])
        .map(|(k, n)| (coop_split_k(rows, k, n), rows as u64 * n as u64));
    weight_grads
        .chain(products)
        .filter(|&(slices, _)| slices > 1)
        .map(|(slices, slab)| slices as u64 * slab)
        .max()
        .unwrap_or(0)
}

/// Most floats (32 MiB) of the scratch in which each block's K-split f32
/// weight gradients keep their slices until one dispatch reduces them all
/// at the end of the backward ([`deferred_split_floats`]); beyond it each
/// is reduced at once, through the one shared scratch.
pub const DEFERRED_SPLIT_MAX_FLOATS: u64 = 8 << 20;

/// Floats of one weight gradient `dW (out, in) = Σ_rows dyᵀ·x`'s slices
/// and their row sums (its bias gradient's partials) where its f32 kernel
/// splits it along the `rows`; 0 where it does not split.
pub fn split_region_floats(out: u32, rows: u32, inp: u32) -> u64 {
    match split_k(out, rows, inp).slices {
        0 | 1 => 0,
        slices => slices as u64 * out as u64 * (inp as u64 + 1),
    }
}

/// Floats of the scratch of every block linear's K-split weight gradient
/// kept for one reduce at the end of the backward: the sum of their
/// [`split_region_floats`], or 0 (none kept) above
/// [`DEFERRED_SPLIT_MAX_FLOATS`].
pub fn deferred_split_floats(cfg: &ModelConfig, rows: usize) -> u64 {
    let (c, rows) = (cfg.d_model as u32, rows as u32);
    let linears = [(3 * c, c), (c, c), (4 * c, c), (c, 4 * c)];
    let per_layer: u64 = linears
        .into_iter()
        .map(|(out, inp)| split_region_floats(out, rows, inp))
        .sum();
    let total = per_layer * cfg.n_layer as u64;
    if total <= DEFERRED_SPLIT_MAX_FLOATS {
        total
    } else {
        0
    }
}

/// Rows a column sum's 8 lanes take per round of four loads each.
const ROWS_PER_ROUND: u32 = 32;
/// Fewest rows per chunk of a column sum: below this a chunk is not worth
/// a workgroup.
const MIN_ROWS_PER_CHUNK: u32 = 64;

/// Rows a column sum (a bias gradient, a LayerNorm's dw and db) adds per
/// partial in its first stage: about √rows, so that both stages are equally
/// short (128 rows and 128 chunks at `N = B·T` = 16 384), a whole number of
/// rounds, and at least 64.
pub fn rows_per_chunk(rows: u32) -> u32 {
    let root = (rows as f64).sqrt().ceil() as u32;
    root.next_multiple_of(ROWS_PER_ROUND)
        .max(MIN_ROWS_PER_CHUNK)
}

/// Number of row chunks, hence partial rows, of a column sum of `rows` rows.
pub fn row_chunks(rows: u32) -> u32 {
    rows.div_ceil(rows_per_chunk(rows))
}

/// Floats of the one buffer of partials whose sums a training step's
/// backward finishes in one dispatch: each LayerNorm's dw and db partials
/// `2 × (chunks, C)`, and room for each biased linear's bias gradient
/// partials `(chunks, out)` where the `rows` take more than one chunk.
pub fn backward_sum_partials_floats(cfg: &ModelConfig, rows: usize) -> u64 {
    let (c, l) = (cfg.d_model as u64, cfg.n_layer as u64);
    let chunks = row_chunks(rows as u32) as u64;
    let layernorms = (2 * l + 1) * 2 * chunks.max(1) * c;
    let biases = if chunks > 1 { l * chunks * 9 * c } else { 0 };
    layernorms + biases
}

/// The buffers [`MemoryPlan::total`] counts: every storage buffer the engine
/// creates for training `cfg` at `B × T` (uniforms of a few bytes aside).
pub fn training_memory(cfg: &ModelConfig, b: usize, t: usize) -> MemoryPlan {
    let p = cfg.num_params() as u64;
    let (n, c, v, l, nh) = (
        (b * t) as u64,
        cfg.d_model as u64,
        cfg.vocab_size as u64,
        cfg.n_layer as u64,
        cfg.n_head as u64,
    );
    let f = 4u64;
    // params, grads, m, v; decay mask (one bit per parameter, in u32 words);
    // grad norm (1), optimiser counters (4 u32), step scalars (8 u32),
    // step log (loss and norm per step).
    let state_bytes =
        4 * p * f + p.div_ceil(32).max(1) * f + f + 16 + 32 + 2 * STEP_LOG_CAPACITY * f;
    let per_block = n * (c + 2 + 3 * c + c + 1 + c + 2 + 8 * c) + b as u64 * nh * t as u64;
    let floats = 2 * n
        + (l + 1) * n * c
        + l * per_block
        + n * c
        + n * c
        + 2 * n
        + n * v
        + n
        + 1
        + n * v
        + n * c * 3
        + n * 3 * c
        + 2 * n * 4 * c;
    let split_k = split_k_scratch_floats(cfg, b * t);
    let (sums, slices) = (
        backward_sum_partials_floats(cfg, b * t),
        deferred_split_floats(cfg, b * t),
    );
    let candidates = [
        ("logits (B·T × vocab)", n * v * f),
        ("MLP activations (B·T × 4·d_model)", n * 4 * c * f),
        ("parameters", p * f),
        ("split-K scratch", split_k * f),
        ("weight gradients' split-K slices", slices * f),
    ];
    let (largest_buffer, largest_buffer_bytes) = candidates
        .into_iter()
        .max_by_key(|x| x.1)
        .expect("five candidates");
    MemoryPlan {
        state_bytes,
        activation_bytes: (floats + split_k + sums + slices) * f,
        largest_buffer_bytes,
        largest_buffer,
    }
}

/// Why a run does not fit, in words that name the limit.
pub fn check_fits(
    plan: &MemoryPlan,
    max_binding_bytes: u64,
    max_buffer_bytes: u64,
    budget_bytes: u64,
) -> Result<(), String> {
    let gib = |x: u64| x as f64 / (1u64 << 30) as f64;
    let limit = max_binding_bytes.min(max_buffer_bytes);
    if plan.largest_buffer_bytes > limit {
        return Err(format!(
            "its {} buffer needs {:.2} GiB, above this GPU's limit of {:.2} GiB per buffer (maxStorageBufferBindingSize / maxBufferSize); lower the batch size or the sequence length",
            plan.largest_buffer,
            gib(plan.largest_buffer_bytes),
            gib(limit)
        ));
    }
    if plan.total() > budget_bytes {
        return Err(format!(
            "it needs {:.2} GiB of GPU memory ({:.2} GiB of weights and optimiser state, {:.2} GiB of activations), above the playground's budget of {:.2} GiB; lower the batch size, the sequence length or the model size",
            gib(plan.total()),
            gib(plan.state_bytes),
            gib(plan.activation_bytes),
            gib(budget_bytes)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Preset, PRESETS};

    #[test]
    fn presets_fit_the_budget_and_an_absurd_batch_is_refused_naming_the_limit() {
        for p in crate::PRESETS {
            let plan = training_memory(&p.model(83), p.batch_size, p.block_size);
            assert!(plan.total() < MEMORY_BUDGET_BYTES, "{}: {plan:?}", p.name);
            check_fits(&plan, 2 << 30, 2 << 30, MEMORY_BUDGET_BYTES).unwrap();
        }
        let large = Preset::by_name("large").unwrap();
        let plan = training_memory(&large.model(83), 512, large.block_size);
        let err = check_fits(&plan, 256 << 20, 256 << 20, MEMORY_BUDGET_BYTES).unwrap_err();
        assert!(err.contains("maxStorageBufferBindingSize"), "{err}");
        let err = check_fits(&plan, u64::MAX, u64::MAX, MEMORY_BUDGET_BYTES).unwrap_err();
        assert!(err.contains("budget of 4.00 GiB"), "{err}");
    }

    /// tiny's weight gradients (K = 2048 rows) are too short to fill a GPU
    /// with 64×64 tiles: they split on the small-output kernel, and the
    /// plan counts the largest of their scratches (QKV's six slices; the
    /// tensor-core fc's eight, larger, where the tensor cores run tiny).
    /// nanogpt's (K = 16384) split on 64×64 tiles.
    #[test]
    fn weight_gradients_split_as_the_plan_counts() {
        let tiny = Preset::by_name("tiny").unwrap();
        let cfg = tiny.model(65);
        let rows = tiny.batch_size * tiny.block_size;
        let c = cfg.d_model as u32;
        let dw = |out: u32, inp: u32| split_k(out, rows as u32, inp);
        for (out, inp, slices) in [(65, c, 16), (3 * c, c, 6), (c, c, 16), (4 * c, c, 4)] {
            let want = SplitK {
                small_tiles: true,
                slices,
            };
            assert_eq!(dw(out, inp), want, "{out} × {inp}");
        }
        let floats = split_k_scratch_floats(&cfg, rows);
        assert!(
            floats >= 6 * 3 * 128 * (128 + 1),
            "QKV's slices and their row sums"
        );
        assert_eq!(coop_split_k(4 * c, rows as u32, c), 8);
        assert_eq!(
            floats,
            8 * 4 * 128 * (128 + 1),
            "the tensor-core fc's slices"
        );
        let plan = training_memory(&cfg, tiny.batch_size, tiny.block_size);
        let without = training_memory(&cfg, 0, 0).activation_bytes;
        assert!(plan.activation_bytes > without + 4 * floats);
        let nanogpt = Preset::by_name("nanogpt").unwrap();
        let rows = (nanogpt.batch_size * nanogpt.block_size) as u32;
        let fc = split_k(4 * 384, rows, 384);
        assert_eq!(
            fc,
            SplitK {
                small_tiles: false,
                slices: 4
            }
        );
        assert!(!split_k(384, rows, 384).small_tiles);
    }

    /// The tensor-core weight gradients split into at most one wave of
    /// workgroups (half a wave at least where K allows), slices of ≥ 256
    /// rows, and the plan's scratch holds every preset's, so that no split
    /// is cut short by it.
    #[test]
    fn tensor_core_splits_fill_a_wave_within_the_scratch() {
        for preset in PRESETS {
            let cfg = preset.model(65);
            let rows = preset.batch_size * preset.block_size;
            let floats = split_k_scratch_floats(&cfg, rows);
            let c = cfg.d_model as u32;
            for (out, inp) in [(65, c), (3 * c, c), (c, c), (4 * c, c), (c, 4 * c)] {
                let slices = coop_split_k(out, rows as u32, inp);
                let tiles = out.div_ceil(COOP_TILE) * inp.div_ceil(COOP_TILE);
                let (name, groups) = (preset.name, tiles * slices);
                assert!(
                    groups <= COOP_SPLIT_WORKGROUPS.max(tiles),
                    "{name}: {out}×{inp}"
                );
                assert!(slices == 1 || rows as u32 / slices >= COOP_SPLIT_MIN_K / 2);
                let need = slices as u64 * out as u64 * (inp as u64 + 1);
                assert!(slices == 1 || need <= floats, "{name}: {out}×{inp}");
            }
        }
        let splits = |name: &str| {
            let p = Preset::by_name(name).unwrap();
            let (rows, c) = ((p.batch_size * p.block_size) as u32, p.d_model as u32);
            [(3 * c, c), (c, c), (4 * c, c), (c, 4 * c)].map(|(o, i)| coop_split_k(o, rows, i))
        };
        // 243, 252, 252 and 252 workgroups of ≥ 585 rows.
        assert_eq!(splits("nanogpt"), [9, 28, 7, 7]);
        // The products of B·T rows: nanoGPT's whole (384 tiles and more);
        // small's 64-tile ones of K ≥ 768 in two slices (128 workgroups),
        // its others whole.
        let products = |rows: u32, c: u32| {
            let split = |k: u32, n: u32| coop_split_k(rows, k, n);
            [
                (c, 3 * c),
                (c, c),
                (4 * c, c),
                (3 * c, c),
                (c, 4 * c),
                (c, 65),
            ]
            .map(|(k, n)| split(k, n))
        };
        assert_eq!(products(16384, 384), [1; 6]);
        assert_eq!(products(4096, 256), [1, 1, 2, 2, 1, 1]);
        let cfg = Preset::by_name("small").unwrap().model(65);
        let floats = split_k_scratch_floats(&cfg, 4096);
        assert!(
            floats >= 2 * 4096 * 256,
            "two slices of small's 256-wide products"
        );
        // 96 and 32 workgroups of 512 fill less than half a wave: 120 and
        // 64 of 409 and 256; then 128 and 128 of 512.
        assert_eq!(splits("small"), [10, 16, 8, 8]);
        // A K too short for two slices is not split.
        assert_eq!(coop_split_k(384, 511, 384), 1);
    }
}
