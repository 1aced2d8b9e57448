// decode_persistent.wgsl's width for every WebGPU device: 256 invocations
// (the default limit), the partials of two rounds in turn (15.5 KB of
// workgroup memory in all, under the default 16 KB).
const WG: u32 = 256u;
const NBUF: u32 = 2u;
const PART: u32 = 2048u;
