// Fused softmax + cross-entropy, one workgroup per row of V logits:
//   losses[n] = logsumexp(z_n) − z_n[target_n]          (max subtracted first)
//   dlogits[n] (+)= (softmax(z_n) − onehot(target_n)) · inv_n_total
// `forward` writes the losses only (evaluation); `forward_backward` also
// writes dlogits, recomputing the probabilities from the row's max and sum
// instead of keeping a (N, V) probs buffer. `mean` reduces the N losses to
// one f32, so the host reads back 4 bytes per step.
// A target ≥ V gives a NaN loss (and no onehot term), visible in the mean.

struct Params {
    n: u32,             // rows N
    v: u32,             // vocabulary V
    accumulate: u32,    // 1: dlogits += …, 0: dlogits = …
    inv_n_total: f32,   // 1/N_total of the mean loss being differentiated
    logits_off: u32,    // logits (N, V)
    targets_off: u32,   // targets (N) u32
    losses_off: u32,    // losses (N)
    dlogits_off: u32,   // dlogits (N, V)
    mean_off: u32,      // mean loss (1)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> losses: array<f32>;
@group(0) @binding(4) var<storage, read_write> dlogits: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean_loss: array<f32>;

const WG: u32 = 128u;
// The lowest finite f32 (Tint rejects a decimal literal that rounds to it).
const LOWEST: f32 = -0x1.fffffep+127f;
var<workgroup> red: array<f32, 128>;

fn workgroup_max(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn workgroup_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

// (max, Σ exp(z − max)) of one row.
fn row_stats(row: u32, lid: u32) -> vec2<f32> {
    let z0 = p.logits_off + row * p.v;
    var m = LOWEST;
    for (var i = lid; i < p.v; i += WG) {
        m = max(m, logits[z0 + i]);
    }
    let zmax = workgroup_max(lid, m);
    var s = 0.0;
    for (var i = lid; i < p.v; i += WG) {
        s += exp(logits[z0 + i] - zmax);
    }
    return vec2<f32>(zmax, workgroup_sum(lid, s));
}

fn row_loss(row: u32, stats: vec2<f32>) -> f32 {
    let tgt = targets[p.targets_off + row];
    if (tgt >= p.v) {
        // A quiet NaN built at run time (a constant NaN is a shader error).
        return bitcast<f32>(0x7fc00000u | tgt);
    }
    return log(stats.y) + stats.x - logits[p.logits_off + row * p.v + tgt];
}

@compute @workgroup_size(128)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wg.y * nwg.x + wg.x;
    if (row >= p.n) {
        return;
    }
    let stats = row_stats(row, lid);
    if (lid == 0u) {
        losses[p.losses_off + row] = row_loss(row, stats);
    }
}

@compute @workgroup_size(128)
fn forward_backward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wg.y * nwg.x + wg.x;
    if (row >= p.n) {
        return;
    }
    let stats = row_stats(row, lid);
    if (lid == 0u) {
        losses[p.losses_off + row] = row_loss(row, stats);
    }
    let tgt = targets[p.targets_off + row];
    let inv_sum = 1.0 / stats.y;
    let z0 = p.logits_off + row * p.v;
    let d0 = p.dlogits_off + row * p.v;
    for (var i = lid; i < p.v; i += WG) {
        let prob = exp(logits[z0 + i] - stats.x) * inv_sum;
        var d = (prob - select(0.0, 1.0, i == tgt)) * p.inv_n_total;
        if (p.accumulate != 0u) {
            d += dlogits[d0 + i];
        }
        dlogits[d0 + i] = d;
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per row, workgroups of 64 rows, the row's logits in order; no workgroup
// memory, no barrier.
fn row_stats_serial(row: u32) -> vec2<f32> {
    let z0 = p.logits_off + row * p.v;
    var m = LOWEST;
    for (var i = 0u; i < p.v; i++) {
        m = max(m, logits[z0 + i]);
    }
    var s = 0.0;
    for (var i = 0u; i < p.v; i++) {
        s += exp(logits[z0 + i] - m);
    }
    return vec2<f32>(m, s);
}

@compute @workgroup_size(64)
fn forward_serial(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wg.y * nwg.x + wg.x) * 64u + lid;
    if (row >= p.n) {
        return;
    }
    losses[p.losses_off + row] = row_loss(row, row_stats_serial(row));
}

@compute @workgroup_size(64)
fn forward_backward_serial(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wg.y * nwg.x + wg.x) * 64u + lid;
    if (row >= p.n) {
        return;
    }
    let stats = row_stats_serial(row);
    losses[p.losses_off + row] = row_loss(row, stats);
    let tgt = targets[p.targets_off + row];
    let inv_sum = 1.0 / stats.y;
    let z0 = p.logits_off + row * p.v;
    let d0 = p.dlogits_off + row * p.v;
    for (var i = 0u; i < p.v; i++) {
        let prob = exp(logits[z0 + i] - stats.x) * inv_sum;
        var d = (prob - select(0.0, 1.0, i == tgt)) * p.inv_n_total;
        if (p.accumulate != 0u) {
            d += dlogits[d0 + i];
        }
        dlogits[d0 + i] = d;
    }
}

// One workgroup: mean_loss[0] = Σ losses / N, summed in a fixed order.
// Each thread keeps four partial sums so that four loads are in flight.
@compute @workgroup_size(128)
fn mean(@builtin(local_invocation_index) lid: u32) {
    var s = vec4<f32>(0.0);
    var i = lid;
    for (; i + 3u * WG < p.n; i += 4u * WG) {
        let o = p.losses_off + i;
        s += vec4<f32>(losses[o], losses[o + WG], losses[o + 2u * WG], losses[o + 3u * WG]);
    }
    for (; i < p.n; i += WG) {
        s.x += losses[p.losses_off + i];
    }
    let total = workgroup_sum(lid, (s.x + s.y) + (s.z + s.w));
    if (lid == 0u) {
        mean_loss[p.mean_off] = total / f32(p.n);
    }
}
