//! The f32 matmul kernels' sources (each with `matmul_common.wgsl`
//! appended) and the tile and step sizes their binders use.

use crate::registry::KernelSource;

/// Each matmul kernel with the files it shares appended, then what every
/// matmul kernel shares.
macro_rules! with_common {
    ($($file:literal),+) => {
        concat!(
            $(include_str!(concat!("../../../../../shaders/", $file)),)+
            include_str!("../../../../../shaders/matmul_common.wgsl"),
            include_str!("../../../../../shaders/epilogue_none.wgsl")
        )
    };
}
/// An f32 tile kernel with a GELU epilogue (`epilogue_gelu.wgsl`: GELU(C)
/// written beside C; `epilogue_gelu_grad.wgsl`: C times GELU' of `aux`)
/// and erf.wgsl appended.
macro_rules! with_gelu {
    ($file:literal, $epilogue:literal) => {
        concat!(
            include_str!(concat!("../../../../../shaders/", $file)),
            include_str!("../../../../../shaders/matmul_common.wgsl"),
            include_str!(concat!("../../../../../shaders/", $epilogue)),
            include_str!("../../../../../shaders/erf.wgsl")
        )
    };
}
const MATMUL_WGSL: &str = with_common!("matmul.wgsl");
const MATMUL_SMALL_WGSL: &str = with_common!("matmul_small.wgsl");
const MATMUL_128_WGSL: &str = with_common!("matmul_128.wgsl");
const MATMUL_GELU_WGSL: &str = with_gelu!("matmul.wgsl", "epilogue_gelu.wgsl");
const MATMUL_SMALL_GELU_WGSL: &str = with_gelu!("matmul_small.wgsl", "epilogue_gelu.wgsl");
const MATMUL_128_GELU_WGSL: &str = with_gelu!("matmul_128.wgsl", "epilogue_gelu.wgsl");
const MATMUL_GELU_GRAD_WGSL: &str = with_gelu!("matmul.wgsl", "epilogue_gelu_grad.wgsl");
const MATMUL_SMALL_GELU_GRAD_WGSL: &str =
    with_gelu!("matmul_small.wgsl", "epilogue_gelu_grad.wgsl");
const MATMUL_128_GELU_GRAD_WGSL: &str = with_gelu!("matmul_128.wgsl", "epilogue_gelu_grad.wgsl");
const MATMUL_COOP_WGSL: &str = with_common!(
    "matmul_coop.wgsl",
    "coop_pad.wgsl",
    "matmul_coop_common.wgsl",
    "erf.wgsl"
);
const MATMUL_COOP_TILED_WGSL: &str = with_common!(
    "matmul_coop_tiled.wgsl",
    "coop_tiles_vec.wgsl",
    "coop_pad.wgsl",
    "matmul_coop_common.wgsl",
    "erf.wgsl"
);
/// The tiled kernel with its tiles a half an element (the reuse pipelines).
const MATMUL_COOP_TILED_HALF_WGSL: &str = with_common!(
    "matmul_coop_tiled.wgsl",
    "coop_tiles_half.wgsl",
    "coop_pad.wgsl",
    "matmul_coop_common.wgsl",
    "erf.wgsl"
);
const COOP_STAGE_WGSL: &str = with_common!("coop_stage.wgsl", "coop_pad.wgsl");

pub const MATMUL_F32: KernelSource = KernelSource {
    key: "matmul_f32_64x64_k16",
    wgsl: MATMUL_WGSL,
    entry: "main",
    constants: &[],
};

pub const MATMUL_F32_SMALL: KernelSource = KernelSource {
    key: "matmul_f32_32x32_k4x8",
    wgsl: MATMUL_SMALL_WGSL,
    entry: "main",
    constants: &[],
};

/// [`MATMUL_F32_SMALL`] that also sums op(A)'s rows (split K's
/// `SUMS_ROWS`).
pub const MATMUL_F32_SMALL_ROW_SUMS: KernelSource = KernelSource {
    key: "matmul_f32_32x32_k4x8_row_sums",
    wgsl: MATMUL_SMALL_WGSL,
    entry: "main",
    constants: &[("SUMS_ROWS", 1.0)],
};

/// The cell layout of matmul_small.wgsl ([`TileKernel::Cells`]).
pub const MATMUL_F32_CELLS: KernelSource = KernelSource {
    key: "matmul_f32_cells",
    wgsl: MATMUL_SMALL_WGSL,
    entry: "main_cells",
    constants: &[],
};

pub const MATMUL_F32_128: KernelSource = KernelSource {
    key: "matmul_f32_128x128_k8",
    wgsl: MATMUL_128_WGSL,
    entry: "main",
    constants: &[],
};

/// Each f32 tile kernel with the GELU epilogue ([`TileKernel::source`]
/// with `gelu`): C, and GELU(C) beside it.
pub const MATMUL_F32_GELU: KernelSource = KernelSource {
    key: "matmul_f32_64x64_k16_gelu",
    wgsl: MATMUL_GELU_WGSL,
    ..MATMUL_F32
};
pub const MATMUL_F32_SMALL_GELU: KernelSource = KernelSource {
    key: "matmul_f32_32x32_k4x8_gelu",
    wgsl: MATMUL_SMALL_GELU_WGSL,
    ..MATMUL_F32_SMALL
};
pub const MATMUL_F32_128_GELU: KernelSource = KernelSource {
    key: "matmul_f32_128x128_k8_gelu",
    wgsl: MATMUL_128_GELU_WGSL,
    ..MATMUL_F32_128
};
pub const MATMUL_F32_CELLS_GELU: KernelSource = KernelSource {
    key: "matmul_f32_cells_gelu",
    wgsl: MATMUL_SMALL_GELU_WGSL,
    ..MATMUL_F32_CELLS
};

/// Each f32 tile kernel with the GELU-backward epilogue
/// ([`TileKernel::source_gelu_grad`]): C times GELU' of the GELU's input.
pub const MATMUL_F32_GELU_GRAD: KernelSource = KernelSource {
    key: "matmul_f32_64x64_k16_gelu_grad",
    wgsl: MATMUL_GELU_GRAD_WGSL,
    ..MATMUL_F32
};
pub const MATMUL_F32_SMALL_GELU_GRAD: KernelSource = KernelSource {
    key: "matmul_f32_32x32_k4x8_gelu_grad",
    wgsl: MATMUL_SMALL_GELU_GRAD_WGSL,
    ..MATMUL_F32_SMALL
};
pub const MATMUL_F32_128_GELU_GRAD: KernelSource = KernelSource {
    key: "matmul_f32_128x128_k8_gelu_grad",
    wgsl: MATMUL_128_GELU_GRAD_WGSL,
    ..MATMUL_F32_128
};
pub const MATMUL_F32_CELLS_GELU_GRAD: KernelSource = KernelSource {
    key: "matmul_f32_cells_gelu_grad",
    wgsl: MATMUL_SMALL_GELU_GRAD_WGSL,
    ..MATMUL_F32_CELLS
};

/// The cooperative-matrix matmul (`ops::matmul::coop`; native devices with
/// `GpuContext::coop_matrix`) loading its fragments straight from the
/// f16-staged operands.
const COOP_DIRECT: KernelSource = KernelSource {
    key: "matmul_coop_64x128_k16",
    wgsl: MATMUL_COOP_WGSL,
    entry: "main",
    constants: &[],
};

/// The cooperative-matrix matmul through workgroup memory, 32-wide K
/// blocks.
const COOP_TILED: KernelSource = KernelSource {
    key: "matmul_coop_128x128_k32",
    wgsl: MATMUL_COOP_TILED_WGSL,
    entry: "main",
    constants: &[],
};

/// The direct kernel per epilogue (`EPILOGUE`: plain, or with the GELU
/// written beside C; `coop::Epilogue`).
pub const MATMUL_COOP: [KernelSource; 2] = [
    COOP_DIRECT,
    KernelSource {
        key: "matmul_coop_64x128_k16_gelu",
        constants: &[("EPILOGUE", 1.0)],
        ..COOP_DIRECT
    },
];

/// The tiled kernel per [`TiledForm`](super::coop::TiledForm) (its index:
/// the pipeline constants `DBUF`, `WG`, `AHEAD` and `TM` of
/// matmul_coop_tiled.wgsl) and per epilogue (`EPILOGUE`: plain, or with
/// the GELU written beside C). Every plain pipeline but `tiled-ahead3`'s
/// stores the tiles inside C straight from their accumulators
/// (matmul_coop_common.wgsl's `DIRECT`; runs 128–129, BENCHMARKS.md:
/// faster there, slower on `tiled-ahead3`, whose three blocks ahead fill
/// its registers, and on the `A_KM` pipelines below, which keep the
/// scratch too).
pub const MATMUL_COOP_TILED: [[KernelSource; 2]; 8] = [
    [
        KernelSource {
            key: "matmul_coop_128x128_k32",
            constants: &[("DIRECT", 1.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu",
            constants: &[("EPILOGUE", 1.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_128x128_k32_2buf",
            constants: &[("DIRECT", 1.0), ("DBUF", 1.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu_2buf",
            constants: &[("EPILOGUE", 1.0), ("DBUF", 1.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_128x128_k32_wide",
            constants: &[("DIRECT", 1.0), ("WG", 128.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu_wide",
            constants: &[("EPILOGUE", 1.0), ("WG", 128.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_128x128_k32_wide_2buf",
            constants: &[("DIRECT", 1.0), ("DBUF", 1.0), ("WG", 128.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu_wide_2buf",
            constants: &[("EPILOGUE", 1.0), ("DBUF", 1.0), ("WG", 128.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_128x128_k32_ahead3",
            constants: &[("AHEAD", 3.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu_ahead3",
            constants: &[("EPILOGUE", 1.0), ("AHEAD", 3.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_128x128_k32_wide_2buf_ahead2",
            constants: &[
                ("DIRECT", 1.0),
                ("DBUF", 1.0),
                ("WG", 128.0),
                ("AHEAD", 2.0),
            ],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_128x128_k32_gelu_wide_2buf_ahead2",
            constants: &[
                ("EPILOGUE", 1.0),
                ("DBUF", 1.0),
                ("WG", 128.0),
                ("AHEAD", 2.0),
            ],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_256x128_k32",
            constants: &[("DIRECT", 1.0), ("TM", 256.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_256x128_k32_gelu",
            constants: &[("EPILOGUE", 1.0), ("TM", 256.0)],
            ..COOP_TILED
        },
    ],
    [
        KernelSource {
            key: "matmul_coop_256x128_k32_ahead2",
            constants: &[("DIRECT", 1.0), ("TM", 256.0), ("AHEAD", 2.0)],
            ..COOP_TILED
        },
        KernelSource {
            key: "matmul_coop_256x128_k32_gelu_ahead2",
            constants: &[("EPILOGUE", 1.0), ("TM", 256.0), ("AHEAD", 2.0)],
            ..COOP_TILED
        },
    ],
];

/// [`MATMUL_COOP_TILED`] (plain) per form reading op(A) staged as op(A)ᵀ
/// (`A_KM`): a weight gradient reading the gradient its dX product staged.
pub const MATMUL_COOP_TILED_AKM: [KernelSource; 4] = [
    KernelSource {
        key: "matmul_coop_128x128_k32_akm",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("A_KM", 1.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_akm_2buf",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("A_KM", 1.0), ("DBUF", 1.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_akm_wide",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("A_KM", 1.0), ("WG", 128.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_akm_wide_2buf",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("A_KM", 1.0), ("DBUF", 1.0), ("WG", 128.0)],
        ..COOP_TILED
    },
];

/// [`MATMUL_COOP_TILED`] (plain) per form reading op(B) staged as op(B)ᵀ
/// (`B_NK`): a dX product reading the weight its forward product staged.
pub const MATMUL_COOP_TILED_BNK: [KernelSource; 4] = [
    KernelSource {
        key: "matmul_coop_128x128_k32_bnk",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("B_NK", 1.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_bnk_2buf",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("B_NK", 1.0), ("DBUF", 1.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_bnk_wide",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("B_NK", 1.0), ("WG", 128.0)],
        ..COOP_TILED
    },
    KernelSource {
        key: "matmul_coop_128x128_k32_bnk_wide_2buf",
        wgsl: MATMUL_COOP_TILED_HALF_WGSL,
        constants: &[("B_NK", 1.0), ("DBUF", 1.0), ("WG", 128.0)],
        ..COOP_TILED
    },
];

/// Each kernel (plain) skipping its last K block: the dropped-K-tail fault
/// (`ops/matmul/fault.rs`), which the tensor-core gate must fail.
#[cfg(feature = "fault-injection")]
pub const MATMUL_COOP_DROPTAIL: KernelSource = KernelSource {
    key: "matmul_coop_fault_droptail",
    constants: &[("FAULT", 2.0)],
    ..COOP_DIRECT
};
#[cfg(feature = "fault-injection")]
pub const MATMUL_COOP_TILED_DROPTAIL: KernelSource = KernelSource {
    key: "matmul_coop_tiled_fault_droptail",
    constants: &[("FAULT", 2.0)],
    ..COOP_TILED
};

/// op(A) staged as f16 `[M′][K′]` for [`MATMUL_COOP`].
pub const COOP_STAGE_A: KernelSource = KernelSource {
    key: "coop_stage_a",
    wgsl: COOP_STAGE_WGSL,
    entry: "stage_a",
    constants: &[],
};

/// [`COOP_STAGE_A`] for a transposed A, through workgroup memory.
pub const COOP_STAGE_A_T: KernelSource = KernelSource {
    key: "coop_stage_a_t",
    wgsl: COOP_STAGE_WGSL,
    entry: "stage_a_t",
    constants: &[],
};

/// [`COOP_STAGE_B`] for a transposed B, through workgroup memory.
pub const COOP_STAGE_B_T: KernelSource = KernelSource {
    key: "coop_stage_b_t",
    wgsl: COOP_STAGE_WGSL,
    entry: "stage_b_t",
    constants: &[],
};

/// op(B) staged as f16 `[K′][N′]` for [`MATMUL_COOP`].
pub const COOP_STAGE_B: KernelSource = KernelSource {
    key: "coop_stage_b",
    wgsl: COOP_STAGE_WGSL,
    entry: "stage_b",
    constants: &[],
};

pub const MATMUL_REDUCE: KernelSource = KernelSource {
    key: "matmul_split_k_reduce",
    wgsl: MATMUL_WGSL,
    entry: "reduce_slices",
    constants: &[],
};

/// [`MATMUL_REDUCE`] for many split products at once, from a table of
/// their words (`split_k::bind_reduce_table`).
pub const MATMUL_REDUCE_TABLE: KernelSource = KernelSource {
    key: "matmul_split_k_reduce_table",
    wgsl: MATMUL_WGSL,
    entry: "reduce_slices_table",
    constants: &[],
};

/// K per step of the 64×64 kernel's loop; K slices are multiples of it.
pub(super) const KT: u32 = 16;
/// K per step of the small-output kernel's loop (8 per group of threads).
pub(super) const KT_SMALL: u32 = 32;
/// The split reduce's flag (`matmul_common.wgsl`): the slices' row sums of
/// op(A) too.
pub(super) const ROW_SUMS: u32 = 128;
/// The flag of a matmul with a bias (`MatmulDesc::flags`' bit 2).
pub(super) const HAS_BIAS: u32 = 4;
/// Threads per workgroup of `reduce_slices`.
pub(super) const REDUCE_THREADS: u32 = 256;
/// Output tile edge of the large-output kernel.
pub const MATMUL_TILE_LARGE: u32 = 128;
/// Fewest 128×128 tiles for which the large-output kernel is used: about
/// two per SM of a 132-SM GPU; below that the 64×64 kernel's four times as
/// many workgroups fill the GPU better.
pub(super) const LARGE_MIN_TILES: u32 = 256;
/// Invocations per workgroup of the cell kernel, each a 4×4 block of C.
pub(super) const CELL_GROUP: u32 = 64;
