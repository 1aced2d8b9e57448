//! The seeded pick on the GPU (`shaders/sample_pick.wgsl`) against the CPU
//! reference's rule (`tinygpt_core::sample::pick`): the same token for the
//! same logits and draw, for temperatures, top-k and top-p over
//! vocabularies below, at and past the kernel's 256 threads up to the
//! largest one allowed; ties in weight ranked by index; a non-finite logit
//! reported as the greedy pick reports it. And through the decoder: a GPU
//! session and a CPU session of the same weights write the same text for
//! the same seed.

use tinygpt_core::sample::{pick as cpu_pick, SampleParams};
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::argmax::{bind_sample_pick, sample_params_words, Pick, PICK_BYTES};
use tinygpt_gpu::ops::attention::decode_position_buffer;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;

mod pick_common;
use pick_common::{check_next, next_input, next_input_tables};

/// Runs the seeded pick on `logits` at position `p` with draw `u`.
fn gpu_pick(gpu: &TestGpu, logits: &[f32], params: &SampleParams, p: u32, u: f32) -> (u32, Pick) {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let padded = [vec![1e30; 3], logits.to_vec()].concat();
    let buf = ctx.upload("logits", &padded).unwrap();
    let v = logits.len() as u32;
    let words = sample_params_words(v, 3, params);
    let uniform = ctx.uniform("params", bytemuck::cast_slice(&words));
    let position = decode_position_buffer(ctx);
    ctx.queue.write_buffer(&position, 0, &p.to_le_bytes());
    let next = decode_position_buffer(ctx);
    let (emb, x, t_max) = next_input_tables(gpu, logits.len(), p + 2);
    let token = ctx.zeros("token", 1).unwrap();
    let picks = ctx.zeros("picks", 4 * (p as usize + 1)).unwrap();
    let mut draws = vec![0.5f32; p as usize + 1];
    draws[p as usize] = u;
    let draws = ctx.upload("draws", &draws).unwrap();
    let k = bind_sample_pick(
        ctx,
        &mut reg,
        (v, 1),
        View::at(&buf, 3),
        &uniform,
        (&position, &next),
        &token,
        &picks,
        &draws,
        next_input(&emb, &x, logits.len(), t_max),
    )
    .unwrap();
    submit(ctx, "sample_pick", &[&k]);
    let t = pollster::block_on(ctx.read_bytes(&token, 4)).unwrap();
    let picked = u32::from_le_bytes(t.clone().try_into().unwrap());
    check_next(gpu, (&next, &x), (logits.len(), picked, p));
    let all = pollster::block_on(ctx.read_bytes(&picks, picks.size())).unwrap();
    let at = (PICK_BYTES * p as u64) as usize;
    let record = Pick::parse(&all[at..at + PICK_BYTES as usize]);
    (u32::from_le_bytes(t.try_into().unwrap()), record[0])
}

fn settings() -> Vec<SampleParams> {
    let s = |temperature, top_k, top_p| SampleParams {
        temperature,
        top_k,
        top_p,
        seed: 0,
    };
    vec![
        s(1.0, None, None),
        s(0.5, None, None),
        s(2.0, None, None),
        s(0.8, Some(1), None),
        s(0.8, Some(5), None),
        s(0.8, Some(40), Some(0.9)),
        s(1.0, None, Some(0.3)),
        s(1e-9, None, None),
    ]
}

#[test]
fn the_gpu_pick_is_the_cpu_rules_token() {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(11);
    let (mut cases, mut differ) = (0, Vec::new());
    for v in [2usize, 83, 255, 256, 257, 512] {
        for params in settings() {
            for round in 0..3 {
                let logits: Vec<f32> = (0..v).map(|_| rng.uniform(-6.0, 6.0)).collect();
                let u = rng.next_f32();
                let (token, record) = gpu_pick(gpu, &logits, &params, round, u);
                let want = cpu_pick(&logits, &params, u);
                assert_eq!(record.token, token, "the record is the token");
                assert_eq!(record.non_finite, None);
                cases += 1;
                if token != want {
                    differ.push(format!("V {v} {params:?} u {u}: GPU {token}, CPU {want}"));
                }
            }
        }
    }
    // `exp` may differ by an ulp between the two: a pick may change only
    // when the draw falls that close to a boundary — never in these cases.
    assert!(
        differ.is_empty(),
        "{} of {cases} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    println!("{cases} seeded picks: GPU = CPU");
}

#[test]
fn equal_weights_rank_by_index_and_a_non_finite_logit_is_reported() {
    let gpu = gpu_or_skip!();
    // Four equal maxima: top-2 keeps indices 1 and 4; u below one half
    // picks the first of them, above it the second.
    let logits = [0.0, 3.0, 1.0, 0.5, 3.0, 3.0, 3.0];
    let params = SampleParams {
        temperature: 1.0,
        top_k: Some(2),
        top_p: None,
        seed: 0,
    };
    for (u, want) in [(0.1, 1), (0.9, 4)] {
        assert_eq!(cpu_pick(&logits, &params, u), want);
        assert_eq!(gpu_pick(gpu, &logits, &params, 0, u).0, want);
    }
    let mut bad = logits.to_vec();
    bad[5] = f32::NAN;
    let (_, record) = gpu_pick(gpu, &bad, &params, 2, 0.5);
    assert_eq!(record.non_finite.map(|n| n.0), Some(5));
}

#[test]
fn a_seed_writes_the_same_text_on_the_gpu_and_the_cpu() {
    let Some((mut g, mut c)) = tinygpt_gpu::testing::trained_pair(64, 20) else {
        return;
    };
    let gen = |s: &mut tinygpt_gpu::engine::Session, params: &SampleParams| {
        // Within one context window: both backends see the same context.
        pollster::block_on(s.generate(
            "to be",
            58,
            params,
            |_| std::ops::ControlFlow::Continue(()),
            || std::future::ready(()),
        ))
        .unwrap()
    };
    for (seed, mut params) in settings().into_iter().enumerate() {
        params.seed = seed as u64;
        let (gt, ct) = (gen(&mut g, &params), gen(&mut c, &params));
        assert_eq!(gt, ct, "{params:?}");
        assert_eq!(gt.chars().count(), 58);
    }
    // Another seed, another text (at temperature 1 on a barely trained model).
    let p = |seed| SampleParams {
        temperature: 1.0,
        top_k: None,
        top_p: None,
        seed,
    };
    assert_ne!(gen(&mut g, &p(1)), gen(&mut g, &p(2)));
}

/// `Session::generate_samples`: on the GPU the samples decode together, on
/// the CPU one after another; sample `i` writes the text seed `seed + i`
/// writes alone on both. Zero, too many and several greedy samples are
/// refused with one clear error each.
#[test]
fn several_samples_write_each_seeds_text_on_the_gpu_and_the_cpu() {
    let Some((mut g, mut c)) = tinygpt_gpu::testing::trained_pair(64, 20) else {
        return;
    };
    type S = tinygpt_gpu::engine::Session;
    let go = |s: &mut S, params: &SampleParams, samples| {
        pollster::block_on(s.generate_samples(
            "to be",
            40,
            params,
            samples,
            |_, _| std::ops::ControlFlow::Continue(()),
            || std::future::ready(()),
        ))
    };
    let params = SampleParams {
        temperature: 1.0,
        top_k: Some(20),
        top_p: Some(0.9),
        seed: 7,
    };
    let gpu = go(&mut g, &params, 4).unwrap();
    assert_eq!(gpu.len(), 4);
    assert_eq!(gpu, go(&mut c, &params, 4).unwrap(), "GPU = CPU");
    for (i, text) in gpu.iter().enumerate() {
        let alone = go(&mut g, &params.for_sample(i), 1).unwrap();
        assert_eq!(&alone[0], text, "sample {i} = seed {} alone", 7 + i);
        assert_eq!(text.chars().count(), 40);
    }
    let distinct: std::collections::HashSet<_> = gpu.iter().collect();
    assert_eq!(distinct.len(), 4, "{gpu:?}");
    for (samples, temperature, why) in [
        (0, 1.0, "samples must be in 1..=8 (got 0)"),
        (9, 1.0, "samples must be in 1..=8 (got 9)"),
        (
            2,
            0.0,
            "temperature 0 (greedy) gives all 2 samples the same text",
        ),
    ] {
        let p = SampleParams {
            temperature,
            ..params
        };
        for s in [&mut g, &mut c] {
            let e = go(s, &p, samples).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
