// Shared by the `main_serial` entry points of the three attention training
// kernels (the kernel layout `Cpu`), appended to each after
// attention_dropout.wgsl: the row an invocation owns in workgroups
// (⌈T/64⌉, NH, B), where its head's columns start, and the dropout factors.

struct SerialRow {
    // The query (or key) row in its sequence; ≥ T past the end.
    t: u32,
    b: u32,
    h: u32,
}

fn serial_row(wg: vec3<u32>, lid: u32) -> SerialRow {
    return SerialRow(wg.x * 64u + lid, wg.z, wg.y);
}

// qkv index of the head's Q columns in row s of the invocation's sequence
// (its K columns start C later, its V columns 2C later).
fn serial_qkv(x: SerialRow, s: u32) -> u32 {
    return (x.b * p.t + s) * 3u * p.c + x.h * p.hs;
}

// out / dout index of the head's columns in row s.
fn serial_out(x: SerialRow, s: u32) -> u32 {
    return (x.b * p.t + s) * p.c + x.h * p.hs;
}

// The step's mask key, 0 without dropout.
fn serial_drop_key() -> u32 {
    if (p.threshold == 0u) {
        return 0u;
    }
    return drop_key();
}

// The dropout factor of weight (t, s): 1 without dropout.
fn serial_drop(key: u32, x: SerialRow, t: u32, s: u32) -> f32 {
    if (p.threshold == 0u) {
        return 1.0;
    }
    return drop1(key, x.b, x.h, t, s);
}
