//! Deliberately wrong kernel variants, which exist only so tests can prove
//! a gate catches them. They are compiled in with the `fault-injection`
//! feature alone (native tests, the CLI, the browser tests' build); a
//! production build has an empty [`Fault`], no fault pipeline and no way
//! to ask for one.

use crate::registry::KernelSource;

/// A deliberately wrong variant, selectable only to prove a gate catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Accumulate (and multiply) in f16 registers.
    #[cfg(feature = "fault-injection")]
    F16Accumulate,
    /// Skip the last partial K tile.
    #[cfg(feature = "fault-injection")]
    DropKTail,
    /// Pack weights by truncation instead of round-to-nearest-even.
    #[cfg(feature = "fault-injection")]
    TruncatePack,
    /// Never invalidate the packed-weight cache after a train step.
    #[cfg(feature = "fault-injection")]
    StaleCache,
}

/// Kernel variants per f16-storage entry point: the real one, then (with
/// fault injection) the f16-accumulate and dropped-K-tail ones.
pub(crate) const VARIANTS: usize = if cfg!(feature = "fault-injection") {
    3
} else {
    1
};

impl Fault {
    /// Whether this build can inject faults at all.
    pub const AVAILABLE: bool = cfg!(feature = "fault-injection");

    /// Parses the test switch's name (`?fault=f16acc`, `--fault droptail`);
    /// `None` for an unknown name, and always in a production build.
    pub fn parse(name: &str) -> Option<Self> {
        #[cfg(feature = "fault-injection")]
        match name {
            "f16acc" => return Some(Self::F16Accumulate),
            "droptail" => return Some(Self::DropKTail),
            "trunc" => return Some(Self::TruncatePack),
            "stale" => return Some(Self::StaleCache),
            _ => {}
        }
        let _ = name;
        None
    }

    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "fault-injection")]
            Self::F16Accumulate => "f16acc",
            #[cfg(feature = "fault-injection")]
            Self::DropKTail => "droptail",
            #[cfg(feature = "fault-injection")]
            Self::TruncatePack => "trunc",
            #[cfg(feature = "fault-injection")]
            Self::StaleCache => "stale",
        }
    }

    /// The kernel variant of `fault`: 0 for the real kernels, 1 and 2 for
    /// the kernel faults (the other faults are not in the matmul).
    pub(crate) fn kernel_index(fault: Option<Fault>) -> usize {
        match fault {
            #[cfg(feature = "fault-injection")]
            Some(Fault::F16Accumulate) => 1,
            #[cfg(feature = "fault-injection")]
            Some(Fault::DropKTail) => 2,
            _ => 0,
        }
    }

    /// Whether `fault` packs by truncation.
    pub(crate) fn truncates(fault: Option<Fault>) -> bool {
        #[cfg(feature = "fault-injection")]
        return fault == Some(Fault::TruncatePack);
        #[cfg(not(feature = "fault-injection"))]
        {
            let _ = fault;
            false
        }
    }

    /// Whether `fault` skips the weight cache's invalidation.
    pub(crate) fn keeps_stale_cache(fault: Option<Fault>) -> bool {
        #[cfg(feature = "fault-injection")]
        return fault == Some(Fault::StaleCache);
        #[cfg(not(feature = "fault-injection"))]
        {
            let _ = fault;
            false
        }
    }
}

/// The `FAULT` override of the f16-weight kernels by kernel variant
/// ([`Fault::kernel_index`]): the real kernel, then the f16-accumulate and
/// dropped-K-tail test variants.
const FAULTS: [&[(&str, f64)]; 3] = [&[], &[("FAULT", 1.0)], &[("FAULT", 2.0)]];

/// The entry point `entry` of `wgsl` under `keys[i]` with the override of
/// variant `i`, for the [`VARIANTS`] this build has (the real one alone
/// without fault injection).
pub(crate) const fn variants(
    keys: [&'static str; 3],
    entry: &'static str,
    wgsl: &'static str,
) -> [KernelSource; VARIANTS] {
    variants_with(keys, entry, wgsl, FAULTS)
}

/// [`variants`] with other constants a variant: `constants[i]` for
/// variant `i` (each of them the kernel's own and the fault's `FAULT`).
pub(crate) const fn variants_with(
    keys: [&'static str; 3],
    entry: &'static str,
    wgsl: &'static str,
    constants: [&'static [(&'static str, f64)]; 3],
) -> [KernelSource; VARIANTS] {
    let real = KernelSource {
        key: keys[0],
        wgsl,
        entry,
        constants: constants[0],
    };
    let mut out = [real; VARIANTS];
    let mut i = 1;
    while i < VARIANTS {
        out[i] = KernelSource {
            key: keys[i],
            constants: constants[i],
            ..real
        };
        i += 1;
    }
    out
}
