//! `Session::inspect`, the page's token probabilities and attention maps:
//! on the GPU (the inference forward, attention weights recomputed from its
//! q and k rows) and on the CPU reference, for the same trained weights,
//! the two agree; a text longer than the context is read a context at a
//! time; the attention is causal and its rows sum to one; bad text is
//! refused by name.

use tinygpt_gpu::engine::{EngineError, Session};
use tinygpt_protocol::{Inspection, INSPECT_TOP};

const TEXT: &str = "to be or not to be, that is the question";

fn sessions() -> Option<(Session, Session)> {
    tinygpt_gpu::testing::trained_pair(48, 30)
}

/// What every inspection must satisfy, whatever computed it.
fn well_formed(i: &Inspection, text: &str) {
    let n = text.chars().count();
    let t = i.t;
    assert_eq!(i.text, text);
    assert_eq!(
        i.attention_from + t,
        n,
        "the attention window ends the text"
    );
    assert_eq!((i.top.len(), i.next_prob.len()), (n, n - 1));
    for top in &i.top {
        assert_eq!(top.len(), INSPECT_TOP);
        assert!(top.windows(2).all(|w| w[0].1 >= w[1].1), "{top:?}");
    }
    // The next character's probability is in the top list when it is high.
    let chars: Vec<char> = text.chars().collect();
    for (p, (top, next)) in i.next_prob.iter().zip(i.top.iter().zip(&chars[1..])) {
        if let Some(&(_, q)) = top.iter().find(|(c, _)| c == next) {
            assert!((p - q).abs() < 1e-6);
        } else {
            assert!(*p <= top[INSPECT_TOP - 1].1 + 1e-6);
        }
    }
    assert_eq!(i.attention.len(), i.layers * i.heads * t * t);
    for l in 0..i.layers {
        for h in 0..i.heads {
            for (q, row) in i.head(l, h).chunks(t).enumerate() {
                assert!(
                    row[q + 1..].iter().all(|&w| w == 0),
                    "causal: layer {l} head {h} row {q}"
                );
                let sum: u32 = row.iter().map(|&w| w as u32).sum();
                let slack = (q as u32 + 1).div_ceil(2) + 1;
                assert!(
                    sum.abs_diff(255) <= slack,
                    "row sums to {sum}/255 (layer {l} head {h} row {q})"
                );
            }
        }
    }
}

/// The two backends' next-character probabilities agree; the worst gap.
fn agree(g: &Inspection, c: &Inspection) -> f32 {
    let worst = g
        .next_prob
        .iter()
        .zip(&c.next_prob)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(
        worst < 1e-3,
        "next-character probabilities differ by {worst}"
    );
    worst
}

#[test]
fn gpu_and_cpu_inspections_agree_and_are_well_formed() {
    let Some((mut g, mut c)) = sessions() else {
        return;
    };
    let gi = pollster::block_on(g.inspect(TEXT)).unwrap();
    let ci = pollster::block_on(c.inspect(TEXT)).unwrap();
    assert_eq!(
        (gi.backend.as_str(), ci.backend.as_str()),
        ("webgpu", "cpu")
    );
    well_formed(&gi, TEXT);
    well_formed(&ci, TEXT);
    let worst = agree(&gi, &ci);
    let att = gi
        .attention
        .iter()
        .zip(&ci.attention)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(att <= 1, "attention bytes differ by {att}");
    // The trained model is not uniform: some head attends sharply.
    assert!(gi.attention.iter().any(|&w| w > 128));
    println!("GPU vs CPU: next-char probabilities within {worst:.2e}, attention within {att}/255");
}

#[test]
fn a_long_text_is_read_a_context_at_a_time_and_bad_text_is_refused() {
    let Some((mut g, mut c)) = sessions() else {
        return;
    };
    // 80 characters, a context of 48: three windows; the attention is the
    // last context's.
    let long = TEXT.repeat(2);
    let i = pollster::block_on(g.inspect(&long)).unwrap();
    well_formed(&i, &long);
    assert_eq!((i.attention_from, i.t), (32, 48));
    let ci = pollster::block_on(c.inspect(&long)).unwrap();
    well_formed(&ci, &long);
    agree(&i, &ci);
    // Windows 0..48, 24..72, 32..80: position 48 is read in 24..72, so
    // its distribution is that of the text 24..=48 on its own (the same
    // context at the same positions).
    let alone = pollster::block_on(g.inspect(&long[24..49])).unwrap();
    let (a, b) = (&i.top[48], &alone.top[24]);
    // (Near-equal small probabilities may swap places: compare by value.)
    assert_eq!(a[0].0, b[0].0);
    assert!(
        a.iter().zip(b).all(|(x, y)| (x.1 - y.1).abs() < 1e-5),
        "{a:?} vs {b:?}"
    );
    let empty = pollster::block_on(g.inspect("")).unwrap_err();
    assert!(matches!(empty, EngineError::EmptyText), "{empty}");
    let unknown = pollster::block_on(g.inspect("to ☃")).unwrap_err();
    assert!(unknown.to_string().contains('☃'), "{unknown}");
}
