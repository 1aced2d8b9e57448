//! Dropout as nanoGPT has it — on the embedding output, on the attention
//! weights (`attn_dropout`) and on each residual branch (`resid_dropout`) —
//! with masks that are a pure function of
//! `(seed, step, site, element)`: no mask is stored, the backward recomputes
//! it, and `shaders/dropout.wgsl` computes the very same bits, so the GPU
//! and this reference drop the same elements.
//!
//! An element is kept when `hash(key(site) ^ hash(i)) ≥ threshold`, with
//! `threshold = round(p · 2³²)`, and a kept value is scaled by `1 / (1 − p)`
//! (inverted dropout: evaluation and sampling run the model unchanged).

use super::float::Float;

/// Which tensor a mask belongs to: the embedding output, layer `l`'s
/// attention weights `(B, NH, T, T)`, or the output of its attention
/// projection or MLP projection (before the residual add).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Embedding,
    Attention(usize),
    AttnProj(usize),
    Mlp(usize),
}

impl Site {
    /// The site's number in the mask key.
    pub fn id(self) -> u32 {
        match self {
            Site::Embedding => 0,
            Site::AttnProj(l) => 1 + 2 * l as u32,
            Site::Mlp(l) => 2 + 2 * l as u32,
            Site::Attention(l) => 0x8000_0000 | l as u32,
        }
    }
}

/// lowbias32 (C. Wellons): a 32-bit integer hash with a low avalanche bias.
/// `shaders/dropout.wgsl` has the same function.
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The dropout of one training step: rate `p`, the run's seed and the
/// step's index (the optimiser's step counter, so a resumed run draws the
/// masks it would have drawn).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropout {
    pub p: f32,
    pub seed: u64,
    pub step: u32,
}

impl Dropout {
    /// `None` when `p` is 0 (no masks at all).
    pub fn at_step(p: f32, seed: u64, step: usize) -> Option<Self> {
        (p > 0.0).then_some(Self {
            p,
            seed,
            step: step as u32,
        })
    }

    /// Hashes below this are dropped.
    pub fn threshold(p: f32) -> u32 {
        (p as f64 * 4_294_967_296.0).round().min(u32::MAX as f64) as u32
    }

    /// The factor kept values are multiplied by, in f32 as the GPU has it.
    pub fn scale(p: f32) -> f32 {
        1.0 / (1.0 - p)
    }

    /// The key of `site`'s mask this step.
    pub fn key(seed: u64, step: u32, site: u32) -> u32 {
        let (lo, hi) = (seed as u32, (seed >> 32) as u32);
        mix32(mix32(mix32(lo ^ mix32(hi)) ^ step) ^ site)
    }

    /// Whether element `i` of the mask with `key` is kept.
    pub fn keeps(key: u32, threshold: u32, i: u32) -> bool {
        mix32(key ^ mix32(i)) >= threshold
    }

    /// The mask of `site` this step.
    pub fn mask(&self, site: Site) -> Mask {
        Mask {
            key: Self::key(self.seed, self.step, site.id()),
            threshold: Self::threshold(self.p),
            scale: Self::scale(self.p),
        }
    }

    /// `x ← mask ∘ x / (1 − p)` for `site` (its forward and, applied to a
    /// gradient, its backward).
    pub fn apply<F: Float>(&self, site: Site, x: &mut [F]) {
        let mask = self.mask(site);
        for (i, v) in x.iter_mut().enumerate() {
            *v *= mask.factor(i as u32);
        }
    }
}

/// One site's mask in one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mask {
    pub key: u32,
    pub threshold: u32,
    pub scale: f32,
}

impl Mask {
    /// What element `i` is multiplied by: `1 / (1 − p)` if kept, else 0.
    pub fn factor<F: Float>(&self, i: u32) -> F {
        if Dropout::keeps(self.key, self.threshold, i) {
            F::of(self.scale as f64)
        } else {
            F::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_about_p_of_the_elements_and_scales_the_rest() {
        for p in [0.1f32, 0.2, 0.5] {
            let d = Dropout::at_step(p, 1337, 7).unwrap();
            let mut x = vec![1.0f32; 100_000];
            d.apply(Site::Mlp(2), &mut x);
            let dropped = x.iter().filter(|&&v| v == 0.0).count() as f64 / x.len() as f64;
            assert!(
                (dropped - p as f64).abs() < 0.005,
                "p {p}: dropped {dropped}"
            );
            let kept = x.iter().find(|&&v| v != 0.0).unwrap();
            assert_eq!(*kept, 1.0 / (1.0 - p));
            // Inverted dropout keeps the mean.
            let mean = x.iter().map(|&v| v as f64).sum::<f64>() / x.len() as f64;
            assert!((mean - 1.0).abs() < 0.01, "p {p}: mean {mean}");
        }
    }

    #[test]
    fn masks_differ_by_site_step_and_seed_and_repeat_exactly() {
        let mask = |seed: u64, step: u32, site: Site| -> Vec<bool> {
            let key = Dropout::key(seed, step, site.id());
            let th = Dropout::threshold(0.2);
            (0..4096).map(|i| Dropout::keeps(key, th, i)).collect()
        };
        let base = mask(1, 3, Site::AttnProj(0));
        assert_eq!(base, mask(1, 3, Site::AttnProj(0)));
        for other in [
            mask(2, 3, Site::AttnProj(0)),
            mask(1 << 32 | 1, 3, Site::AttnProj(0)),
            mask(1, 4, Site::AttnProj(0)),
            mask(1, 3, Site::Mlp(0)),
            mask(1, 3, Site::AttnProj(1)),
            mask(1, 3, Site::Embedding),
        ] {
            let same = base.iter().zip(&other).filter(|(a, b)| a == b).count();
            // Independent masks with keep rate 0.8 agree on ~68 %.
            assert!(same < 3000, "masks nearly equal: {same} of 4096");
        }
    }

    #[test]
    fn zero_rate_is_no_dropout() {
        assert_eq!(Dropout::at_step(0.0, 1, 1), None);
        assert_eq!(Dropout::threshold(0.0), 0);
    }

    #[test]
    fn one_input_bit_flips_about_half_the_output_bits() {
        let (mut flips, mut n) = (0u64, 0u64);
        for x in 0..2000u32 {
            let x = x.wrapping_mul(0x9e37_79b9);
            for bit in 0..32 {
                flips += (mix32(x) ^ mix32(x ^ (1 << bit))).count_ones() as u64;
                n += 1;
            }
        }
        let mean = flips as f64 / n as f64;
        assert!((mean - 16.0).abs() < 0.2, "mean flipped bits {mean}");
    }
}
