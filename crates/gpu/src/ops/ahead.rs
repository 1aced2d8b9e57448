//! Loads ahead into the GPU's L2 cache (`shaders/l2_ahead.wgsl`): extra
//! workgroups of a kernel that leaves most of the GPU idle read the
//! weights the next kernels will read, so that those find them in L2.
//! Only a kernel's speed depends on it, never its results.

use crate::ops::common::shape_error;
use crate::GpuError;

/// Words of a 32-byte sector: each sector of a range is read once.
const SECTOR_WORDS: u32 = 8;
/// Sectors one invocation reads (`AHEAD_LOADS`) and invocations a
/// workgroup.
const LOADS: u64 = 8;
const INVOCATIONS: u64 = 256;
/// Workgroups a dispatch adds, at most (past this, each invocation reads
/// more than [`LOADS`] sectors).
const MAX_GROUPS: u64 = 1024;

/// Up to four ranges of `buffer`, `(first word, words)` each, to load
/// into L2 ahead of the kernels that read them.
#[derive(Clone, Copy, Debug)]
pub struct Ahead<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub ranges: [(u32, u32); 4],
}

impl Ahead<'_> {
    /// The 32-byte sectors of all four ranges.
    pub fn sectors(&self) -> u64 {
        let per = |&(_, n): &(u32, u32)| n.div_ceil(SECTOR_WORDS) as u64;
        self.ranges.iter().map(per).sum()
    }

    /// The workgroups a dispatch adds: one per [`LOADS`] sectors of each
    /// of its 256 invocations, at most [`MAX_GROUPS`].
    pub fn groups(&self) -> u32 {
        self.sectors().div_ceil(LOADS * INVOCATIONS).min(MAX_GROUPS) as u32
    }

    /// Refuses ranges past the buffer's end, or more sectors than a word
    /// counts.
    pub(crate) fn check(&self, op: &'static str) -> Result<(), GpuError> {
        let words = self.buffer.size() / 4;
        for &(first, n) in &self.ranges {
            if first as u64 + n as u64 > words {
                return Err(shape_error(
                    op,
                    format!(
                        "loads ahead of words {first}..{} of a buffer of {words}",
                        first + n
                    ),
                ));
            }
        }
        if self.sectors() > u32::MAX as u64 {
            return Err(shape_error(
                op,
                "more sectors ahead than a word counts".into(),
            ));
        }
        Ok(())
    }

    /// The `Ahead` uniform of l2_ahead.wgsl, for `groups` workgroups
    /// (0: none, whatever the ranges); its `sink` is 0.
    pub(crate) fn uniform_bytes(&self, groups: u32) -> [u8; 48] {
        let r = &self.ranges;
        bytemuck::cast([
            r[0].0,
            r[0].1,
            r[1].0,
            r[1].1,
            r[2].0,
            r[2].1,
            r[3].0,
            r[3].1,
            groups,
            0,
            self.sectors() as u32,
            0,
        ])
    }
}
