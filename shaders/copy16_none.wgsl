
// copy16_write.wgsl's other form (appended): a producer without an f16
// copy.
fn copy16_write(row: u32, col: u32, width: u32, v: f32, scale: f32) {}

fn copy16_write_flat(i: u32, width: u32, v: f32, scale: f32) {}
