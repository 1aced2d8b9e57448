//! The layers of the GPT as paired `*_forward` / `*_backward` free functions,
//! llm.c style, generic over `f32` (the model) and `f64` (gradient checks).
//!
//! Shapes: `B` batch, `T` time, `C` channels, `V` vocab, `NH` heads,
//! `HS = C/NH` channels per head; `N = B·T` rows when the layer does not care
//! about the split. All buffers are row-major.
//!
//! Every backward *accumulates* (`+=`) into its gradient outputs: the caller
//! zeroes them once, a residual branch's gradient is simply added into the
//! stream's, and the tied token embedding collects both of its uses.

use super::dropout::Mask;
use super::float::{axpy, dot, Float};

/// LayerNorm ε, as in GPT-2 and PyTorch's default.
pub const LN_EPS: f64 = 1e-5;

/// `out[b,t,:] = tok_emb[inputs[b,t], :] + pos_emb[t, :]`.
pub fn encoder_forward<F: Float>(
    out: &mut [F],  // (B,T,C)
    inputs: &[u32], // (B,T)
    tok_emb: &[F],  // (V,C)
    pos_emb: &[F],  // (T_max,C)
    t: usize,
    c: usize,
) {
    for (row, (o, &tok)) in out.chunks_exact_mut(c).zip(inputs).enumerate() {
        let te = &tok_emb[tok as usize * c..][..c];
        let pe = &pos_emb[(row % t) * c..][..c];
        for ((o, &a), &p) in o.iter_mut().zip(te).zip(pe) {
            *o = a + p;
        }
    }
}

/// Scatters `dout` back to the embedding rows that were read.
pub fn encoder_backward<F: Float>(
    dtok_emb: &mut [F], // (V,C)
    dpos_emb: &mut [F], // (T_max,C)
    dout: &[F],         // (B,T,C)
    inputs: &[u32],     // (B,T)
    t: usize,
    c: usize,
) {
    for (row, (d, &tok)) in dout.chunks_exact(c).zip(inputs).enumerate() {
        axpy(&mut dtok_emb[tok as usize * c..][..c], F::ONE, d);
        axpy(&mut dpos_emb[(row % t) * c..][..c], F::ONE, d);
    }
}

/// `out = (x − μ)·σ̂ · w + b` per row, with `σ̂ = 1/√(var + ε)` (biased
/// variance). Keeps `μ` and `σ̂` for the backward pass.
pub fn layernorm_forward<F: Float>(
    out: &mut [F],  // (N,C)
    mean: &mut [F], // (N)
    rstd: &mut [F], // (N)
    inp: &[F],      // (N,C)
    w: &[F],        // (C)
    bias: &[F],     // (C)
) {
    let c = w.len();
    let inv_c = F::of(1.0 / c as f64);
    for (n, (o, x)) in out.chunks_exact_mut(c).zip(inp.chunks_exact(c)).enumerate() {
        let mu = x.iter().fold(F::ZERO, |s, &v| s + v) * inv_c;
        let var = x.iter().fold(F::ZERO, |s, &v| s + (v - mu) * (v - mu)) * inv_c;
        let rs = F::ONE / (var + F::of(LN_EPS)).sqrt();
        for i in 0..c {
            o[i] = (x[i] - mu) * rs * w[i] + bias[i];
        }
        mean[n] = mu;
        rstd[n] = rs;
    }
}

/// Closed form, with `x̂ = (x − μ)·σ̂` and `g = dout ⊙ w`:
/// `dx = σ̂ · (g − mean(g) − x̂ · mean(g ⊙ x̂))`, `dw = Σ dout ⊙ x̂`,
/// `db = Σ dout` (sums over rows).
#[allow(clippy::too_many_arguments)]
pub fn layernorm_backward<F: Float>(
    dinp: &mut [F], // (N,C)
    dw: &mut [F],   // (C)
    db: &mut [F],   // (C)
    dout: &[F],     // (N,C)
    inp: &[F],      // (N,C)
    w: &[F],        // (C)
    mean: &[F],     // (N)
    rstd: &[F],     // (N)
) {
    let c = w.len();
    let inv_c = F::of(1.0 / c as f64);
    let rows = dinp.chunks_exact_mut(c).zip(dout.chunks_exact(c));
    for (n, ((dx, dy), x)) in rows.zip(inp.chunks_exact(c)).enumerate() {
        let (mu, rs) = (mean[n], rstd[n]);
        let mut mean_g = F::ZERO;
        let mut mean_gx = F::ZERO;
        for i in 0..c {
            let g = dy[i] * w[i];
            mean_g += g;
            mean_gx += g * (x[i] - mu) * rs;
        }
        mean_g *= inv_c;
        mean_gx *= inv_c;
        for i in 0..c {
            let xhat = (x[i] - mu) * rs;
            dx[i] += rs * (dy[i] * w[i] - mean_g - xhat * mean_gx);
            dw[i] += dy[i] * xhat;
            db[i] += dy[i];
        }
    }
}

/// `out = inp · wᵀ + bias` with PyTorch's `(out, in)` weight layout, so each
/// output is a dot product of two contiguous rows.
pub fn matmul_forward<F: Float>(
    out: &mut [F],      // (N,OC)
    inp: &[F],          // (N,IC)
    w: &[F],            // (OC,IC)
    bias: Option<&[F]>, // (OC)
    ic: usize,
    oc: usize,
) {
    for (o, x) in out.chunks_exact_mut(oc).zip(inp.chunks_exact(ic)) {
        for (j, (oj, wj)) in o.iter_mut().zip(w.chunks_exact(ic)).enumerate() {
            *oj = dot(x, wj) + bias.map_or(F::ZERO, |b| b[j]);
        }
    }
}

/// `dinp = dout · w`, `dw = doutᵀ · inp`, `dbias = Σ_rows dout`, in one pass
/// over the rows so `w` and `dw` stay in cache and every inner loop is a
/// contiguous `axpy`.
#[allow(clippy::too_many_arguments)]
pub fn matmul_backward<F: Float>(
    dinp: &mut [F],              // (N,IC)
    dw: &mut [F],                // (OC,IC)
    mut dbias: Option<&mut [F]>, // (OC)
    dout: &[F],                  // (N,OC)
    inp: &[F],                   // (N,IC)
    w: &[F],                     // (OC,IC)
    ic: usize,
    oc: usize,
) {
    let rows = dinp.chunks_exact_mut(ic).zip(inp.chunks_exact(ic));
    for ((dx, x), dy) in rows.zip(dout.chunks_exact(oc)) {
        let cols = dw.chunks_exact_mut(ic).zip(w.chunks_exact(ic));
        for (j, ((dwj, wj), &d)) in cols.zip(dy).enumerate() {
            axpy(dx, d, wj);
            axpy(dwj, d, x);
            if let Some(db) = dbias.as_deref_mut() {
                db[j] += d;
            }
        }
    }
}

/// Causal multi-head self-attention on the fused `qkv` rows (`[0,C)` Q,
/// `[C,2C)` K, `[2C,3C)` V; head `h` owns channels `[h·HS, (h+1)·HS)` of
/// each). Keeps the softmax probabilities `att` (zero above the diagonal).
pub fn attention_forward<F: Float>(
    out: &mut [F], // (B,T,C)
    att: &mut [F], // (B,NH,T,T)
    qkv: &[F],     // (B,T,3C)
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
) {
    attention_forward_masked(out, att, qkv, b, t, c, nh, None);
}

/// [`attention_forward`] with dropout on the attention weights: element
/// `((b·NH + h)·T + t)·T + s` of `mask` scales `p_ts` in the weighted sum
/// of values. `att` keeps the weights before the mask (the backward
/// recomputes it).
#[allow(clippy::too_many_arguments)]
pub fn attention_forward_masked<F: Float>(
    out: &mut [F], // (B,T,C)
    att: &mut [F], // (B,NH,T,T)
    qkv: &[F],     // (B,T,3C)
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
    mask: Option<Mask>,
) {
    let hs = c / nh;
    let scale = F::of(1.0 / (hs as f64).sqrt());
    let at =
        |bi: usize, ti: usize, part: usize, h: usize| (bi * t + ti) * 3 * c + part * c + h * hs;
    for bi in 0..b {
        for h in 0..nh {
            for ti in 0..t {
                let q = &qkv[at(bi, ti, 0, h)..][..hs];
                let p = &mut att[((bi * nh + h) * t + ti) * t..][..t];
                for s in 0..=ti {
                    p[s] = dot(q, &qkv[at(bi, s, 1, h)..][..hs]) * scale;
                }
                let max = p[..=ti]
                    .iter()
                    .fold(p[0], |m, &x| if x > m { x } else { m });
                let mut sum = F::ZERO;
                for ps in &mut p[..=ti] {
                    *ps = (*ps - max).exp();
                    sum += *ps;
                }
                let inv = F::ONE / sum;
                p[..=ti].iter_mut().for_each(|ps| *ps *= inv);
                p[ti + 1..].fill(F::ZERO);
                let y = &mut out[(bi * t + ti) * c + h * hs..][..hs];
                y.fill(F::ZERO);
                let row = ((bi * nh + h) * t + ti) * t;
                for s in 0..=ti {
                    let z = mask.map_or(F::ONE, |m| m.factor((row + s) as u32));
                    axpy(y, p[s] * z, &qkv[at(bi, s, 2, h)..][..hs]);
                }
            }
        }
    }
}

/// With `y = Σ_s p_s v_s` and `p = softmax(q·k_s·scale)`:
/// `dv_s += p_s dy`, `dp_s = dy·v_s`, and the softmax closed form
/// `dpre_s = p_s (dp_s − Σ_r p_r dp_r)`; then `dq += dpre_s·scale·k_s`,
/// `dk_s += dpre_s·scale·q`.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward<F: Float>(
    dqkv: &mut [F], // (B,T,3C)
    dout: &[F],     // (B,T,C)
    qkv: &[F],      // (B,T,3C)
    att: &[F],      // (B,NH,T,T)
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
) {
    attention_backward_masked(dqkv, dout, qkv, att, b, t, c, nh, None);
}

/// [`attention_backward`] through the forward's weight mask `z`: the value
/// weights were `p z`, so `dv_s += p_s z_s dy` and `dp_s = z_s dy·v_s`;
/// the softmax closed form is unchanged (`Σ_r p_r dp_r = dy·y` still).
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_masked<F: Float>(
    dqkv: &mut [F], // (B,T,3C)
    dout: &[F],     // (B,T,C)
    qkv: &[F],      // (B,T,3C)
    att: &[F],      // (B,NH,T,T)
    b: usize,
    t: usize,
    c: usize,
    nh: usize,
    mask: Option<Mask>,
) {
    let hs = c / nh;
    let scale = F::of(1.0 / (hs as f64).sqrt());
    let at =
        |bi: usize, ti: usize, part: usize, h: usize| (bi * t + ti) * 3 * c + part * c + h * hs;
    let mut dp = vec![F::ZERO; t];
    let mut dq = vec![F::ZERO; hs];
    for bi in 0..b {
        for h in 0..nh {
            for ti in 0..t {
                let p = &att[((bi * nh + h) * t + ti) * t..][..t];
                let dy = &dout[(bi * t + ti) * c + h * hs..][..hs];
                let row = ((bi * nh + h) * t + ti) * t;
                for s in 0..=ti {
                    let z = mask.map_or(F::ONE, |m| m.factor((row + s) as u32));
                    let v = at(bi, s, 2, h);
                    dp[s] = dot(dy, &qkv[v..][..hs]) * z;
                    axpy(&mut dqkv[v..][..hs], p[s] * z, dy);
                }
                let pdp = (0..=ti).fold(F::ZERO, |acc, s| acc + p[s] * dp[s]);
                let q = at(bi, ti, 0, h);
                dq.fill(F::ZERO);
                for s in 0..=ti {
                    let dpre = p[s] * (dp[s] - pdp) * scale;
                    let k = at(bi, s, 1, h);
                    axpy(&mut dq, dpre, &qkv[k..][..hs]);
                    axpy(&mut dqkv[k..][..hs], dpre, &qkv[q..][..hs]);
                }
                axpy(&mut dqkv[q..][..hs], F::ONE, &dq);
            }
        }
    }
}

/// Exact GELU: `x · Φ(x) = ½ x (1 + erf(x/√2))`.
pub fn gelu_forward<F: Float>(out: &mut [F], inp: &[F]) {
    let half = F::of(0.5);
    let inv_sqrt2 = F::of(std::f64::consts::FRAC_1_SQRT_2);
    for (o, &x) in out.iter_mut().zip(inp) {
        *o = half * x * (F::ONE + (x * inv_sqrt2).erf());
    }
}

/// Closed form: `d/dx [x Φ(x)] = Φ(x) + x φ(x)`, `φ(x) = e^{−x²/2}/√(2π)`.
pub fn gelu_backward<F: Float>(dinp: &mut [F], inp: &[F], dout: &[F]) {
    let half = F::of(0.5);
    let inv_sqrt2 = F::of(std::f64::consts::FRAC_1_SQRT_2);
    let inv_sqrt_2pi = F::of(1.0 / (2.0 * std::f64::consts::PI).sqrt());
    for ((dx, &x), &dy) in dinp.iter_mut().zip(inp).zip(dout) {
        let cdf = half * (F::ONE + (x * inv_sqrt2).erf());
        let pdf = (-half * x * x).exp() * inv_sqrt_2pi;
        *dx += dy * (cdf + x * pdf);
    }
}

/// `out = a + b`. Its backward is the identity into both branches, which the
/// accumulating backwards give for free: see the module docs.
pub fn residual_forward<F: Float>(out: &mut [F], a: &[F], b: &[F]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

/// Fused softmax + cross-entropy. Writes `probs = softmax(logits)` and the
/// per-row loss `−ln probs[target] = logsumexp(logits) − logits[target]`;
/// returns the mean loss in nats per character.
pub fn crossentropy_forward<F: Float>(
    probs: &mut [F],  // (N,V)
    losses: &mut [F], // (N)
    logits: &[F],     // (N,V)
    targets: &[u32],  // (N)
    v: usize,
) -> F {
    let rows = probs.chunks_exact_mut(v).zip(logits.chunks_exact(v));
    for ((p, z), (loss, &tgt)) in rows.zip(losses.iter_mut().zip(targets)) {
        let max = z.iter().fold(z[0], |m, &x| if x > m { x } else { m });
        let mut sum = F::ZERO;
        for (pi, &zi) in p.iter_mut().zip(z) {
            *pi = (zi - max).exp();
            sum += *pi;
        }
        let inv = F::ONE / sum;
        p.iter_mut().for_each(|pi| *pi *= inv);
        *loss = sum.ln() + max - z[tgt as usize];
    }
    losses.iter().fold(F::ZERO, |s, &l| s + l) / F::of(losses.len() as f64)
}

/// Closed form of the mean loss's gradient:
/// `dlogits = (softmax(logits) − onehot(target)) / N`.
pub fn crossentropy_backward<F: Float>(
    dlogits: &mut [F], // (N,V)
    probs: &[F],       // (N,V)
    targets: &[u32],   // (N)
    v: usize,
) {
    let inv_n = F::of(1.0 / targets.len() as f64);
    let rows = dlogits.chunks_exact_mut(v).zip(probs.chunks_exact(v));
    for ((d, p), &tgt) in rows.zip(targets) {
        for (di, &pi) in d.iter_mut().zip(p) {
            *di += pi * inv_n;
        }
        d[tgt as usize] -= inv_n;
    }
}
