//! The LayerNorm's kernels: per entry point, the plain source (with
//! copy16_none.wgsl appended) and, for those writing a matrix a
//! tensor-core product reads as its op(A) — the forward's `y`, the
//! backward's `dx` — the form writing its f16 copy too (copy16.wgsl
//! prepended, copy16_write.wgsl appended: `StagedRows::for_producer`).

use crate::registry::KernelSource;

macro_rules! shader {
    ($($file:literal),+) => {
        concat!($(include_str!(concat!("../../../../../shaders/", $file))),+)
    };
}

/// layernorm.wgsl with its entry points and passes (ln_rows.wgsl) and the
/// row sums it shares with the GEMVs' LayerNorm prologue (ln_sum.wgsl).
macro_rules! layernorm {
    ($($copy:literal)?) => {
        shader!($($copy,)? "layernorm.wgsl", "ln_rows.wgsl", "ln_sum.wgsl")
    };
}

/// The residual add and the LayerNorm after it (layernorm_residual.wgsl),
/// with the LayerNorm's passes and sums and the dropout masks' hash.
macro_rules! residual {
    ($($copy:literal)?) => {
        shader!(
            $($copy,)?
            "layernorm_residual.wgsl",
            "ln_rows.wgsl",
            "ln_sum.wgsl",
            "dropout_mask.wgsl"
        )
    };
}

const LAYERNORM_WGSL: &str = concat!(layernorm!(), shader!("copy16_none.wgsl"));
const LAYERNORM_COPY16_WGSL: &str =
    concat!(layernorm!("copy16.wgsl"), shader!("copy16_write.wgsl"));
const RESIDUAL_WGSL: &str = concat!(residual!(), shader!("copy16_none.wgsl"));
const RESIDUAL_COPY16_WGSL: &str = concat!(residual!("copy16.wgsl"), shader!("copy16_write.wgsl"));
const BACKWARD_WGSL: &str = shader!("layernorm_backward.wgsl", "copy16_none.wgsl");
const BACKWARD_COPY16_WGSL: &str = shader!(
    "copy16.wgsl",
    "layernorm_backward.wgsl",
    "copy16_write.wgsl"
);

pub const LAYERNORM_RESIDUAL: KernelSource = KernelSource {
    key: "layernorm_residual",
    wgsl: RESIDUAL_WGSL,
    entry: "forward",
    constants: &[],
};

/// [`LAYERNORM_RESIDUAL`] in the [`Layout::Cpu`](crate::kernel::Layout)
/// layout: a row per invocation (so every `_SERIAL` kernel).
pub const LAYERNORM_RESIDUAL_SERIAL: KernelSource = KernelSource {
    key: "layernorm_residual_serial",
    wgsl: RESIDUAL_WGSL,
    entry: "forward_serial",
    constants: &[],
};

pub const LAYERNORM_FORWARD: KernelSource = KernelSource {
    key: "layernorm_forward",
    wgsl: LAYERNORM_WGSL,
    entry: "forward",
    constants: &[],
};

pub const LAYERNORM_FORWARD_SERIAL: KernelSource = KernelSource {
    key: "layernorm_forward_serial",
    wgsl: LAYERNORM_WGSL,
    entry: "forward_serial",
    constants: &[],
};

pub const LAYERNORM_BACKWARD_DX: KernelSource = KernelSource {
    key: "layernorm_backward_dx",
    wgsl: BACKWARD_WGSL,
    entry: "dx_rows",
    constants: &[],
};

pub const LAYERNORM_BACKWARD_DX_SERIAL: KernelSource = KernelSource {
    key: "layernorm_backward_dx_serial",
    wgsl: BACKWARD_WGSL,
    entry: "dx_serial",
    constants: &[],
};

pub const LAYERNORM_BACKWARD_DWDB: KernelSource = KernelSource {
    key: "layernorm_backward_dwdb_partials",
    wgsl: BACKWARD_WGSL,
    entry: "dwdb_partials",
    constants: &[],
};

pub const LAYERNORM_BACKWARD_DWDB_SERIAL: KernelSource = KernelSource {
    key: "layernorm_backward_dwdb_partials_serial",
    wgsl: BACKWARD_WGSL,
    entry: "dwdb_partials_serial",
    constants: &[],
};

/// The kernels above writing their output's f16 copy too: `[Gpu, Cpu]`
/// layouts each.
pub const LAYERNORM_RESIDUAL_COPY16: [KernelSource; 2] = [
    KernelSource {
        key: "layernorm_residual_copy16",
        wgsl: RESIDUAL_COPY16_WGSL,
        entry: "forward",
        constants: &[],
    },
    KernelSource {
        key: "layernorm_residual_serial_copy16",
        wgsl: RESIDUAL_COPY16_WGSL,
        entry: "forward_serial",
        constants: &[],
    },
];
pub const LAYERNORM_FORWARD_COPY16: [KernelSource; 2] = [
    KernelSource {
        key: "layernorm_forward_copy16",
        wgsl: LAYERNORM_COPY16_WGSL,
        entry: "forward",
        constants: &[],
    },
    KernelSource {
        key: "layernorm_forward_serial_copy16",
        wgsl: LAYERNORM_COPY16_WGSL,
        entry: "forward_serial",
        constants: &[],
    },
];
pub const LAYERNORM_BACKWARD_DX_COPY16: [KernelSource; 2] = [
    KernelSource {
        key: "layernorm_backward_dx_copy16",
        wgsl: BACKWARD_COPY16_WGSL,
        entry: "dx_rows",
        constants: &[],
    },
    KernelSource {
        key: "layernorm_backward_dx_serial_copy16",
        wgsl: BACKWARD_COPY16_WGSL,
        entry: "dx_serial",
        constants: &[],
    },
];
