//! The gate framework's clock for the CLI.

use std::sync::OnceLock;
use std::time::Instant;

/// Milliseconds since the first call.
pub fn now_ms() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}
