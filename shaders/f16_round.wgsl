// `to_f16`: what the f16-accumulate fault variants (ops/matmul/fault.rs)
// keep of a sum, shared by the kernels that have them — appended after
// f16w_common.wgsl to the f16-storage and f16-compute kernels, and to the
// persistent decoder's source.

// What an f16 register would hold: x rounded to f16 by round-to-nearest-
// even, saturating to ±inf past the f16 range as f16 hardware does. In
// integer arithmetic on purpose: NVIDIA's compiler folds
// unpack2x16float(pack2x16float(x)) back into x, which made this fault a
// no-op on the H200 (measured 2026-12-02); bits it cannot fold.
fn to_f16(x: f32) -> f32 {
    let ax = abs(x);
    if (ax >= 65520.0) {
        return bitcast<f32>((bitcast<u32>(x) & 0x80000000u) | 0x7f800000u);
    }
    if (ax < 6.103515625e-05) {
        // f16 subnormals: multiples of 2^-24 (the scaling is exact and
        // WGSL's round() breaks ties to even).
        return round(x * 16777216.0) * 5.9604644775390625e-08;
    }
    // Normal: keep 10 of the 23 mantissa bits, ties to even.
    let u = bitcast<u32>(x);
    return bitcast<f32>((u + 0xfffu + ((u >> 13u) & 1u)) & 0xffffe000u);
}
