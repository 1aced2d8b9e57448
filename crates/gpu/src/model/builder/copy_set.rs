//! Which f16 copies the graph has made and which are fresh (`copies.rs`
//! makes and reads them).

use crate::ops::matmul::coop_stage::StagedRows;
use std::collections::{HashMap, HashSet};

/// A buffer and the offset of a matrix in it.
pub(super) type At = (wgpu::Buffer, u32);

#[derive(Default)]
pub(super) struct Copies {
    /// Each output's copy, made by its first producer.
    made: HashMap<At, StagedRows>,
    /// The outputs whose last writer wrote their copy too.
    fresh: HashSet<At>,
}

impl Copies {
    /// The copy made for the output at `at`, fresh or not.
    pub(super) fn made(&self, at: &At) -> Option<&StagedRows> {
        self.made.get(at)
    }

    /// Keeps `copy` as the output's at `at` (replacing another).
    pub(super) fn make(&mut self, at: At, copy: StagedRows) {
        self.made.insert(at, copy);
    }

    /// The output at `at` was just written, with its copy (`fresh`) or
    /// without.
    pub(super) fn mark(&mut self, at: At, fresh: bool) {
        match fresh {
            true => self.fresh.insert(at),
            false => self.fresh.remove(&at),
        };
    }

    /// The output's copy, if its last writer wrote it.
    pub(super) fn fresh(&self, at: &At) -> Option<&StagedRows> {
        self.fresh.get(at)?;
        self.made.get(at)
    }
}
