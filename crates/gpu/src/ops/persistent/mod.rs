//! A whole decoded token in one workgroup per sample
//! (`shaders/decode_persistent.wgsl`): every block, the final LayerNorm and
//! the tied head in one dispatch, writing the logits — the decoder's
//! `Persistent` layout, for models whose rows fit one workgroup
//! ([`persistent_fits`]): the kernel on its own (`kernel.rs`), and with
//! the pick after its logits (`pick.rs`: one dispatch a token); each at
//! two widths ([`PersistentWidth`]).

mod kernel;
mod pick;

pub use kernel::*;
pub use pick::*;
