//! The tensor-core matmul's kernels (`coop.rs` binds them): the direct one
//! and the tiled one's forms, the form the engine binds, and the epilogue
//! each pipeline carries.

use super::coop_stage::{StagedLayout, StagedRows};
use super::fault::Fault;
use super::kernels::{
    MATMUL_COOP, MATMUL_COOP_TILED, MATMUL_COOP_TILED_AKM, MATMUL_COOP_TILED_BNK,
};
use crate::ops::View;
use crate::registry::KernelSource;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The cooperative-matrix kernels; each sums its blocks of C in 16×16×16
/// f16 → f32 products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoopKernel {
    /// `matmul_coop.wgsl`: four subgroups, a 64×128 tile, each loading its
    /// fragments from the staged operands in storage.
    Direct,
    /// `matmul_coop_tiled.wgsl`: a 128×128 (or 256×128) tile, the
    /// operands' 32-wide K blocks copied through workgroup memory, in one of
    /// its forms.
    Tiled(TiledForm),
}

/// The tiled kernel's forms: its pipeline constants `WG`, `DBUF`, `AHEAD`
/// and `TM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TiledForm {
    /// Eight subgroups each summing 32×64 of the tile, one block's tiles,
    /// two barriers a block: the form runs 60–70 measured (BENCHMARKS.md).
    Base,
    /// Two blocks' tiles (the next block copied into the other while this
    /// one is multiplied): one barrier a block; the block after the next
    /// loaded once the next is copied (run 126: 4096³ at 148 TFLOP/s
    /// against 127 loading it before the products).
    TwoBuffers,
    /// Four subgroups each summing 64×64: eight fragments loaded per
    /// sixteen products where the base form loads six per eight.
    Wide,
    /// Both.
    WideTwoBuffers,
    /// `Base` loading the staged operands three blocks ahead (`AHEAD`;
    /// run 95: 4096³ at 145 TFLOP/s against 108), with `Base`'s reuse
    /// pipelines (loading ahead slowed those).
    BaseAhead3,
    /// `WideTwoBuffers` loading two ahead (147 against 111), likewise.
    WideTwoBuffersAhead2,
    /// A 256×128 tile (`TM`): eight subgroups each summing 64×64, one
    /// block's tiles, each op(B) tile shared by eight subgroups — a quarter
    /// less copied and loaded per product than the 128×128 forms. The
    /// plain layout only: its reuse pipelines are `Base`'s.
    Tall,
    /// `Tall` loading two blocks ahead.
    TallAhead2,
}

impl TiledForm {
    pub const ALL: [TiledForm; 8] = [
        TiledForm::Base,
        TiledForm::TwoBuffers,
        TiledForm::Wide,
        TiledForm::WideTwoBuffers,
        TiledForm::BaseAhead3,
        TiledForm::WideTwoBuffersAhead2,
        TiledForm::Tall,
        TiledForm::TallAhead2,
    ];

    /// Its index in the kernel tables.
    fn index(self) -> usize {
        self as usize
    }

    /// The form whose reuse pipelines (`A_KM`, `B_NK`) it binds: its
    /// index in those tables.
    fn reuse_index(self) -> usize {
        match self {
            TiledForm::BaseAhead3 | TiledForm::Tall | TiledForm::TallAhead2 => {
                TiledForm::Base.index()
            }
            TiledForm::WideTwoBuffersAhead2 => TiledForm::WideTwoBuffers.index(),
            other => other.index(),
        }
    }
}

impl CoopKernel {
    /// Every kernel (the golden tests run each; `tinygpt bench` times each).
    pub const ALL: [CoopKernel; 9] = [
        CoopKernel::Direct,
        CoopKernel::Tiled(TiledForm::Base),
        CoopKernel::Tiled(TiledForm::TwoBuffers),
        CoopKernel::Tiled(TiledForm::Wide),
        CoopKernel::Tiled(TiledForm::WideTwoBuffers),
        CoopKernel::Tiled(TiledForm::BaseAhead3),
        CoopKernel::Tiled(TiledForm::WideTwoBuffersAhead2),
        CoopKernel::Tiled(TiledForm::Tall),
        CoopKernel::Tiled(TiledForm::TallAhead2),
    ];

    pub fn name(self) -> &'static str {
        match self {
            CoopKernel::Direct => "direct",
            CoopKernel::Tiled(TiledForm::Base) => "tiled",
            CoopKernel::Tiled(TiledForm::TwoBuffers) => "tiled-2buf",
            CoopKernel::Tiled(TiledForm::Wide) => "tiled-wide",
            CoopKernel::Tiled(TiledForm::WideTwoBuffers) => "tiled-wide-2buf",
            CoopKernel::Tiled(TiledForm::BaseAhead3) => "tiled-ahead3",
            CoopKernel::Tiled(TiledForm::WideTwoBuffersAhead2) => "tiled-wide-2buf-ahead2",
            CoopKernel::Tiled(TiledForm::Tall) => "tiled-tall",
            CoopKernel::Tiled(TiledForm::TallAhead2) => "tiled-tall-ahead2",
        }
    }

    /// The kernel of this name ([`CoopKernel::name`]).
    pub fn from_name(name: &str) -> Option<CoopKernel> {
        CoopKernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kernel of `fault` with `epilogue`'s pipeline constant — the real
    /// one, or (fault injection, plain epilogue) the one that drops its last
    /// K block, the only fault these kernels [`carry`](carries) — and its
    /// rows of C per workgroup.
    pub(super) fn source(
        self,
        fault: Option<Fault>,
        epilogue: Epilogue<'_>,
        layout: StagedLayout,
    ) -> (&'static KernelSource, u32) {
        // The reuse pipelines and the dropped tail are 128-row forms.
        let own = layout == StagedLayout::Staged && !fault.is_some_and(carries);
        let rows = match self {
            CoopKernel::Direct => 64,
            CoopKernel::Tiled(TiledForm::Tall | TiledForm::TallAhead2) if own => 256,
            CoopKernel::Tiled(_) => 128,
        };
        (self.pipeline(fault, epilogue, layout), rows)
    }

    fn pipeline(
        self,
        fault: Option<Fault>,
        epilogue: Epilogue<'_>,
        layout: StagedLayout,
    ) -> &'static KernelSource {
        // Reuse only offers these to the tiled kernel's plain epilogue.
        let (form, reuse) = match self {
            CoopKernel::Tiled(form) => (form.index(), form.reuse_index()),
            CoopKernel::Direct => (0, 0),
        };
        match layout {
            StagedLayout::AKm => return &MATMUL_COOP_TILED_AKM[reuse],
            StagedLayout::BNk => return &MATMUL_COOP_TILED_BNK[reuse],
            StagedLayout::Staged => {}
        }
        // The dropped K tail is built on the base form only.
        #[cfg(feature = "fault-injection")]
        if fault.is_some_and(carries) {
            return match self {
                CoopKernel::Direct => &super::kernels::MATMUL_COOP_DROPTAIL,
                CoopKernel::Tiled(_) => &super::kernels::MATMUL_COOP_TILED_DROPTAIL,
            };
        }
        let _ = fault;
        let e = epilogue.index();
        match self {
            CoopKernel::Direct => &MATMUL_COOP[e],
            CoopKernel::Tiled(_) => &MATMUL_COOP_TILED[form][e],
        }
    }
}

/// Whether the tensor-core kernels have a variant of `fault`: the dropped K
/// tail only — they pack nothing (operands are staged per call) and their
/// accumulators are the matrix units' f32, so under the other faults their
/// gate runs the real kernels.
pub fn carries(fault: Fault) -> bool {
    #[cfg(feature = "fault-injection")]
    return fault == Fault::DropKTail;
    #[cfg(not(feature = "fault-injection"))]
    match fault {}
}

/// The kernel the engine binds (the fastest training step measured on the
/// H100: `tiled-ahead3`, runs 97 and 99 in BENCHMARKS.md — the base form's
/// bits), unless [`set_engine_kernel`] picked another.
pub const COOP_KERNEL: CoopKernel = CoopKernel::Tiled(TiledForm::BaseAhead3);

/// The kernel the engine's products bind: [`COOP_KERNEL`] (`usize::MAX`),
/// or what `tinygpt bench --coop-kernel` set to time a step on another
/// (its index in [`CoopKernel::ALL`]).
static ENGINE_KERNEL: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Makes the engine's products (every binding with
/// [`CoopOptions`](super::coop::CoopOptions)' default kernel from now on)
/// run `kernel`.
pub fn set_engine_kernel(kernel: CoopKernel) {
    let i = CoopKernel::ALL
        .iter()
        .position(|&k| k == kernel)
        .expect("every kernel is listed");
    ENGINE_KERNEL.store(i, Ordering::Relaxed);
}

/// The kernel the engine's products bind now.
pub fn engine_kernel() -> CoopKernel {
    let i = ENGINE_KERNEL.load(Ordering::Relaxed);
    CoopKernel::ALL.get(i).copied().unwrap_or(COOP_KERNEL)
}

/// What the epilogue does beyond the scale, the bias and the accumulation
/// (`matmul_coop_common.wgsl`'s `EPILOGUE`, a pipeline constant: a plain
/// product's kernel carries no GELU code); the view has C's shape.
#[derive(Clone, Copy, Debug, Default)]
pub enum Epilogue<'a> {
    #[default]
    Plain,
    /// C is a linear's output before its GELU; GELU(C) is written here
    /// too, and its f16 copy where one is given (the next product's op(A):
    /// [`StagedRows::for_producer`]). (The backward's product times GELU′
    /// of the GELU's input measured 0.40 ms a call more than the product
    /// alone on the H200 against the GELU backward's 0.15: run 25; it stays
    /// a kernel of its own.)
    Gelu(View<'a>, Option<&'a StagedRows>),
    /// The GELU's f16 copy alone: GELU(C) is not written in f32 (a
    /// training forward, whose backward reads the copy — the next
    /// product's op(A), its weight gradient's op(B) — and never the f32;
    /// 100 MB less written a nanoGPT layer). The view is the f32 GELU's
    /// place, which the copy's producer binding is checked against.
    GeluCopy(View<'a>, &'a StagedRows),
}

impl<'a> Epilogue<'a> {
    /// The kernel's `EPILOGUE` (its index in the kernel tables).
    fn index(self) -> usize {
        match self {
            Epilogue::Plain => 0,
            Epilogue::Gelu(..) | Epilogue::GeluCopy(..) => 1,
        }
    }

    pub(super) fn view(self) -> Option<View<'a>> {
        match self {
            Epilogue::Plain => None,
            Epilogue::Gelu(v, _) | Epilogue::GeluCopy(v, _) => Some(v),
        }
    }

    /// Whether the epilogue writes GELU(C) in f32.
    pub(super) fn writes_f32(self) -> bool {
        matches!(self, Epilogue::Gelu(..))
    }

    /// The f16 copy of the GELU's output the epilogue writes, if any.
    pub(super) fn copy(self) -> Option<&'a StagedRows> {
        match self {
            Epilogue::Plain | Epilogue::Gelu(_, None) => None,
            Epilogue::Gelu(_, Some(c)) | Epilogue::GeluCopy(_, c) => Some(c),
        }
    }
}
