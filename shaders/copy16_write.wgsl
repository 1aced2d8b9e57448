
// The f16 copy's binding and writes (copy16.wgsl): element (row, col) of a
// (rows, width) matrix at row · K′ + col, K′ the width padded to
// coop_pad.wgsl's PAD_K (32), times `scale` (a power of two: a gradient's
// scale) and rounded to f16 by the device's f32 → f16 conversion, as
// coop_stage.wgsl's `stage_a` does — the same bits. The rows and columns
// past the matrix are never written: the buffer is made zero.

@group(0) @binding(15) var<storage, read_write> copy16: array<f16>;

const COPY16_PAD: u32 = 32u;

fn copy16_write(row: u32, col: u32, width: u32, v: f32, scale: f32) {
    let stride = (width + COPY16_PAD - 1u) / COPY16_PAD * COPY16_PAD;
    copy16[row * stride + col] = f16(v * scale);
}

// The same for element i of the matrix in row-major order.
fn copy16_write_flat(i: u32, width: u32, v: f32, scale: f32) {
    copy16_write(i / width, i % width, width, v, scale);
}
