// f32 GEMV, the M = 1 case of matmul.wgsl with B transposed (a linear
// weight W (N, K), rows contiguous): c (N) = a (K) · Wᵀ [+ bias (N)] [+ c].
// It serves one decoded token, where a 64×64 tile would leave 63 of its 64
// rows idle.
//
// One workgroup = 8 output columns × 32 lanes. Lane i of column j reads
// W[j, i], W[j, i + 32], … (a warp reads 128 neighbouring bytes of one row)
// with eight loads in flight, then a fixed tree adds the 32 lanes. Every
// product and sum is f32.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 2: add bias, bit 3: accumulate into C (as matmul.wgsl)
    flags: u32,
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const LANES: u32 = 32u;
const COLS: u32 = 8u;
const HAS_BIAS: u32 = 4u;
const ACCUMULATE: u32 = 8u;

var<workgroup> red: array<f32, 256>;

// a[k + 32i] for i < 4.
fn xs(k: u32) -> vec4<f32> {
    let o = p.a_off + k;
    return vec4<f32>(a[o], a[o + LANES], a[o + 2u * LANES], a[o + 3u * LANES]);
}

// W[col, k + 32i] for i < 4, the row starting at `row`.
fn ws(row: u32, k: u32) -> vec4<f32> {
    let o = row + k;
    return vec4<f32>(b[o], b[o + LANES], b[o + 2u * LANES], b[o + 3u * LANES]);
}

@compute @workgroup_size(32, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let lane = lid.x;
    let col = (wg.y * nwg.x + wg.x) * COLS + lid.y;
    var acc = vec4<f32>(0.0);
    if (col < p.n) {
        let row = p.b_off + col * p.k;
        var k = lane;
        var acc1 = vec4<f32>(0.0);
        for (; k + 7u * LANES < p.k; k += 8u * LANES) {
            acc = fma(xs(k), ws(row, k), acc);
            acc1 = fma(xs(k + 4u * LANES), ws(row, k + 4u * LANES), acc1);
        }
        acc += acc1;
        for (; k < p.k; k += LANES) {
            acc.x = fma(a[p.a_off + k], b[row + k], acc.x);
        }
    }
    let i = lid.y * LANES + lane;
    red[i] = (acc.x + acc.y) + (acc.z + acc.w);
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            red[i] += red[i + s];
        }
        workgroupBarrier();
    }
    if (lane == 0u && col < p.n) {
        var v = red[i];
        if ((p.flags & HAS_BIAS) != 0u) {
            v += bias[p.bias_off + col];
        }
        let o = p.c_off + col;
        if ((p.flags & ACCUMULATE) != 0u) {
            v += c[o];
        }
        c[o] = v;
    }
}
