
// The LayerNorm backward's dx and its dw/db partials in one dispatch
// (appended to layernorm_backward.wgsl; ops::layernorm binds it where the
// device runs 1,024 invocations a workgroup and C ≤ 128 · FUSED_COLS):
// workgroup w is row chunk w (`rows_per_chunk` rows, the partials' chunk),
// eight groups of 128 invocations, group g taking rows r0 + g, r0 + g + 8,
// … one a step. Each row's dx is dx_rows' (its loads, its tree, its bits);
// the partials of the columns an invocation owns are summed over its
// group's rows as dwdb_partials' lane g sums them (the rows 16 apart from
// r0 + g into one sum, the rows 8 after those into another), then the
// eight groups are added by dwdb_partials' tree: the two dispatches' bits,
// dout and x read once.

const GROUPS: u32 = 8u;
const FUSED_COLS: u32 = 4u;

// Each group's tree: its 128 pairs and 8 nodes (one for every step: a
// step's pairs are read before its second barrier and its nodes before
// the next step's first, so no step overwrites what another still reads);
// at the end the groups' column sums.
var<workgroup> fred: array<vec2<f32>, 1088>;

fn ftree16(at: u32, j: u32) -> vec2<f32> {
    let a = (fred[at + j] + fred[at + j + 64u]) + (fred[at + j + 32u] + fred[at + j + 96u]);
    let b = (fred[at + j + 16u] + fred[at + j + 80u]) + (fred[at + j + 48u] + fred[at + j + 112u]);
    return a + b;
}

// workgroup_sum2 over group g's 128 pairs.
fn group_sum2(g: u32, lid: u32, v: vec2<f32>) -> vec2<f32> {
    let at = g * 136u;
    fred[at + lid] = v;
    workgroupBarrier();
    if (lid < 8u) {
        fred[at + 128u + lid] = ftree16(at, lid) + ftree16(at, lid + 8u);
    }
    workgroupBarrier();
    let n = at + 128u;
    return ((fred[n] + fred[n + 4u]) + (fred[n + 2u] + fred[n + 6u]))
        + ((fred[n + 1u] + fred[n + 5u]) + (fred[n + 3u] + fred[n + 7u]));
}

@compute @workgroup_size(1024)
fn dx_dwdb_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let g = tid / 128u;
    let lid = tid % 128u;
    let chunk = wg.x;
    let chunks = (p.n + p.rows_per_chunk - 1u) / p.rows_per_chunk;
    let r0 = chunk * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.n);
    // Partials of this invocation's columns lid + 128 j: rows r0 + g + 16 i
    // (a), rows r0 + g + 8 + 16 i (b).
    var a: array<vec2<f32>, FUSED_COLS>;
    var b: array<vec2<f32>, FUSED_COLS>;
    let steps = (p.rows_per_chunk + GROUPS - 1u) / GROUPS;
    for (var i = 0u; i < steps; i++) {
        let row = r0 + g + i * GROUPS;
        let live = row < r1;
        // A row past the chunk loads the chunk's first (every invocation
        // reaches the barriers) and writes nothing.
        let r = select(r0, row, live);
        let mu = mean[p.mean_off + r];
        let rs = rstd[p.rstd_off + r];
        let d0 = p.dout_off + r * p.c;
        let x0 = p.x_off + r * p.c;
        var acc = vec2<f32>(0.0, 0.0);
        for (var j = 0u; j < FUSED_COLS; j++) {
            let col = lid + j * 128u;
            if (col < p.c) {
                let dy = dout[d0 + col];
                let gw = dy * w[p.w_off + col];
                let xhat = (x[x0 + col] - mu) * rs;
                acc += vec2<f32>(gw, gw * xhat);
                let term = vec2<f32>(dy * xhat, dy);
                if (live && i % 2u == 0u) {
                    a[j] += term;
                } else if (live) {
                    b[j] += term;
                }
            }
        }
        let means = group_sum2(g, lid, acc) / f32(p.c);
        if (live) {
            let o0 = p.dx_off + r * p.c;
            for (var j = 0u; j < FUSED_COLS; j++) {
                let col = lid + j * 128u;
                if (col < p.c) {
                    let gw = dout[d0 + col] * w[p.w_off + col];
                    let xhat = (x[x0 + col] - mu) * rs;
                    var d = rs * (gw - means.x - xhat * means.y);
                    if (p.accumulate != 0u) {
                        d += dx[o0 + col];
                    }
                    dx[o0 + col] = d;
                    copy16_write(r, col, p.c, d, bitcast<f32>(p.copy_scale));
                }
            }
        }
    }
    // The groups' sums of each column, added as dwdb_partials' lanes are.
    for (var j = 0u; j < FUSED_COLS; j++) {
        workgroupBarrier();
        fred[g * 128u + lid] = a[j] + b[j];
        workgroupBarrier();
        let col = lid + j * 128u;
        if (g == 0u && col < p.c) {
            let s = ((fred[lid] + fred[lid + 512u]) + (fred[lid + 256u] + fred[lid + 768u]))
                + ((fred[lid + 128u] + fred[lid + 640u]) + (fred[lid + 384u] + fred[lid + 896u]));
            partials[p.partials_off + chunk * p.c + col] = s.x;
            partials[p.partials_off + (chunks + chunk) * p.c + col] = s.y;
        }
    }
}
