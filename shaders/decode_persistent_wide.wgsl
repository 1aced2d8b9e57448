// decode_persistent.wgsl's wide form, where the device offers 512
// invocations and PERSISTENT_WIDE_BYTES of workgroup memory
// (ops/persistent/mod.rs): rounds of 256 columns (`tiny`'s QKV and fc
// linears in two rounds, its C-wide ones in one), the attention's output
// dims over twice the groups of positions; one buffer of partials (16.5 KB
// of workgroup memory in all, so that a pick fits beside it in 32 KB).
const WG: u32 = 512u;
const NBUF: u32 = 1u;
const PART: u32 = 2048u;
