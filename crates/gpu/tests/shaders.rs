//! Every WGSL module, entry point and override variant the engine can
//! create, validated without a GPU by the naga that wgpu uses: parsed,
//! validated, its `override` constants applied as the pipeline sets them,
//! and written as SPIR-V for its entry point (what the Vulkan backend does;
//! naga's writer has panicked on valid-looking WGSL before). The list is
//! `ops::all_kernels()`, and a `KernelSource` key anywhere in the crate's
//! source that the list lacks fails the test, so a new shader cannot
//! escape it.

use std::collections::BTreeSet;
use std::path::Path;
use tinygpt_gpu::ops::all_kernels;
use tinygpt_gpu::registry::KernelSource;

/// Validates one pipeline: the module, its entry point, its constants (and
/// `shape`'s: `registry::Shape`, as f64) and the SPIR-V of that entry
/// point with those constants.
fn validate(src: &KernelSource, shape: &[(&str, f64)]) -> Result<(), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src.wgsl)
        .map_err(|e| format!("parse: {}", e.emit_to_string(src.wgsl)))?;
    // What WebGPU grants every device: pack2x16float/unpack2x16float are
    // core WGSL (wgpu sets this capability for every adapter it runs on).
    let mut caps = Capabilities::default() | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    // The tensor-core kernel, with what its device must offer (native only).
    if src.wgsl.contains("enable f16;") {
        caps |= Capabilities::SHADER_FLOAT16;
    }
    // The subgroup-sum GEMVs (wgpu's SUBGROUP feature; naga 30 takes no
    // `enable subgroups;`).
    if src.wgsl.contains("subgroupShuffleDown") {
        caps |= Capabilities::SUBGROUP;
    }
    if src.wgsl.contains("enable wgpu_cooperative_matrix;") {
        caps |= Capabilities::COOPERATIVE_MATRIX
            | Capabilities::SHADER_FLOAT16
            | Capabilities::SUBGROUP
            | Capabilities::SUBGROUP_BARRIER;
    }
    let info = Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| format!("validate: {}", e.emit_to_string(src.wgsl)))?;
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == src.entry)
        .ok_or_else(|| format!("no entry point `{}`", src.entry))?;
    if entry.stage != naga::ShaderStage::Compute {
        return Err(format!("`{}` is not a compute entry point", src.entry));
    }
    let mut constants = naga::back::PipelineConstants::default();
    for &(name, value) in src.constants.iter().chain(shape) {
        if !module
            .overrides
            .iter()
            .any(|(_, o)| o.name.as_deref() == Some(name))
        {
            return Err(format!("no override `{name}`"));
        }
        constants.insert(name.to_string(), value);
    }
    let stage = Some((naga::ShaderStage::Compute, src.entry));
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, stage, &constants)
            .map_err(|e| format!("overrides: {e}"))?;
    let options = naga::back::spv::Options::default();
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: src.entry.to_string(),
    };
    naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("SPIR-V: {e}"))?;
    Ok(())
}

#[test]
fn every_pipeline_validates_with_its_constants() {
    let kernels = all_kernels();
    let mut failures = Vec::new();
    for src in &kernels {
        if let Err(e) = validate(src, &[]) {
            failures.push(format!("{} ({}): {e}", src.key, src.entry));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let keys: BTreeSet<_> = kernels.iter().map(|k| k.key).collect();
    assert_eq!(keys.len(), kernels.len(), "two pipelines share a key");
    println!("{} pipelines validated", kernels.len());
}

/// The pipelines bound with shape constants, validated and written as
/// SPIR-V with shapes the engine binds (naga 30's SPIR-V writer has
/// failed on a value that reached a cooperative load from the uniform;
/// these replace uniform reads): the tensor-core attention's head size
/// (`ops/attention/coop.rs`), declared by the kernels that read it.
#[test]
fn shaped_pipelines_validate_with_their_shapes() {
    let shapes: [(&str, &[(&str, f64)]); 4] = [
        ("override HS:", &[("HS", 64.0)]),
        ("override HS:", &[("HS", 48.0)]),
        ("override HS:", &[("HS", 16.0)]),
        ("override COPY:", &[("HS", 64.0), ("COPY", 1.0)]),
    ];
    let mut failures = Vec::new();
    let mut shaped = BTreeSet::new();
    for src in &all_kernels() {
        for (declared, shape) in shapes {
            if !src.wgsl.contains(declared) {
                continue;
            }
            shaped.insert(src.key);
            if let Err(e) = validate(src, shape) {
                failures.push(format!("{} with {shape:?}: {e}", src.key));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for family in [
        "attention_coop_fwd_sg32",
        "attention_coop_bwd_dq_sg32",
        "attention_coop_bwd_dkv_ds_sg32",
    ] {
        assert!(shaped.contains(family), "{family} has no shape constants");
    }
    println!("{} pipelines validated with their shapes", shaped.len());
}

/// Every key literal of a `KernelSource` in the crate's source: `key: "…"`
/// fields, the key lists of `variants(…)` (ops/matmul/f16w.rs), and the
/// keys of `variants!("…", …)` with their `_f16w` twins and those twins'
/// faults (ops/persistent/; the tests build with fault injection).
fn keys_in_source(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            keys_in_source(&path, out);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for part in text.split("key: \"").skip(1) {
            out.insert(part.split('"').next().unwrap().to_string());
        }
        for part in text.split("variants(").skip(1) {
            let Some(list) = part.trim_start().strip_prefix('[') else {
                continue;
            };
            let list = list.split(']').next().unwrap();
            for key in list.split('"').skip(1).step_by(2) {
                out.insert(key.to_string());
            }
        }
        // The tensor-core attention's pipelines, one per subgroup width.
        for part in text.split("per_width!(").skip(1) {
            if let Some(rest) = part.trim_start().strip_prefix('"') {
                let key = rest.split('"').next().unwrap();
                out.extend([8, 16, 32, 64].map(|w| format!("{key}_sg{w}")));
            }
        }
        for part in text.split("variants!(").skip(1) {
            if let Some(rest) = part.trim_start().strip_prefix('"') {
                let key = rest.split('"').next().unwrap();
                let halves =
                    ["_f16w", "_f16w_f16acc", "_f16w_droptail"].map(|v| format!("{key}{v}"));
                out.extend(std::iter::once(key.to_string()).chain(halves));
            }
        }
    }
}

#[test]
fn no_pipeline_escapes_the_list() {
    let listed: BTreeSet<String> = all_kernels().iter().map(|k| k.key.to_string()).collect();
    let mut found = BTreeSet::new();
    keys_in_source(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(
        found.len() >= listed.len() - 1,
        "the source scan found only {found:?}"
    );
    let missing: Vec<_> = found.difference(&listed).collect();
    assert!(missing.is_empty(), "not in ops::all_kernels(): {missing:?}");
}

#[test]
fn a_broken_shader_or_an_unknown_constant_is_refused() {
    let good = all_kernels()[0];
    let broken = KernelSource {
        wgsl: "@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }",
        entry: "main",
        ..*good
    };
    let e = validate(&broken, &[]).unwrap_err();
    assert!(e.starts_with("parse") || e.starts_with("validate"), "{e}");
    let unknown = KernelSource {
        constants: &[("NO_SUCH_CONSTANT", 1.0)],
        ..*good
    };
    assert!(validate(&unknown, &[])
        .unwrap_err()
        .contains("NO_SUCH_CONSTANT"));
    let no_entry = KernelSource {
        entry: "no_such_entry",
        ..*good
    };
    assert!(validate(&no_entry, &[])
        .unwrap_err()
        .contains("no_such_entry"));
}

/// `src`'s module and the globals its entry point uses.
fn used_globals(src: &KernelSource) -> (naga::Module, Vec<naga::Handle<naga::GlobalVariable>>) {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src.wgsl).unwrap();
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .unwrap();
    let index = module
        .entry_points
        .iter()
        .position(|e| e.name == src.entry)
        .unwrap();
    let used = info.get_entry_point(index);
    let globals = module
        .global_variables
        .iter()
        .filter(|(h, _)| !used[*h].is_empty())
        .map(|(h, _)| h)
        .collect();
    (module, globals)
}

/// The storage buffers `src`'s entry point binds (what wgpu's layout
/// derived from the shader holds).
fn storage_buffers(src: &KernelSource) -> usize {
    let (module, used) = used_globals(src);
    let storage = |h: &&naga::Handle<naga::GlobalVariable>| {
        matches!(
            module.global_variables[**h].space,
            naga::AddressSpace::Storage { .. }
        )
    };
    used.iter().filter(storage).count()
}

/// The workgroup memory `src`'s entry point uses, in bytes.
fn workgroup_bytes(src: &KernelSource) -> u32 {
    let (module, used) = used_globals(src);
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    used.iter()
        .map(|h| &module.global_variables[*h])
        .filter(|g| g.space == naga::AddressSpace::WorkGroup)
        .map(|g| layouter[g.ty].size)
        .sum()
}

/// The invocations of `src`'s entry point's workgroup.
fn invocations(src: &KernelSource) -> u32 {
    let module = naga::front::wgsl::parse_str(src.wgsl).unwrap();
    let e = module
        .entry_points
        .iter()
        .find(|e| e.name == src.entry)
        .unwrap();
    e.workgroup_size.iter().product()
}

/// WebGPU's default workgroup memory and invocations, what every browser
/// offers: every pipeline fits them but the tensor-core kernels (native
/// only; their device must offer `COOP_WORKGROUP_BYTES`) and the wide
/// persistent decoder (bound only where `persistent_wide_offered`; it needs
/// what `PERSISTENT_WIDE_BYTES` and `PERSISTENT_WIDE_INVOCATIONS` say).
#[test]
fn every_pipeline_fits_webgpus_default_workgroup_memory() {
    use tinygpt_gpu::ops::persistent::{
        DECODE_PERSISTENT, DECODE_PERSISTENT_PICK, PERSISTENT_PICK_BYTES, PERSISTENT_WIDE_BYTES,
        PERSISTENT_WIDE_INVOCATIONS,
    };
    let wide = DECODE_PERSISTENT[1].all();
    let picks = DECODE_PERSISTENT_PICK
        .iter()
        .flatten()
        .flat_map(|s| s.all());
    let checked: Vec<&str> = wide.chain(picks).map(|s| s.key).collect();
    let mut over = Vec::new();
    for src in all_kernels() {
        let bytes = workgroup_bytes(src);
        let native = src.wgsl.contains("enable wgpu_cooperative_matrix;");
        if (bytes > 16_384 || invocations(src) > 256) && !native && !checked.contains(&src.key) {
            over.push(format!(
                "{}: {bytes} bytes, {} invocations",
                src.key,
                invocations(src)
            ));
        }
    }
    assert!(
        over.is_empty(),
        "past 16,384 bytes or 256 invocations: {over:?}"
    );
    let head = workgroup_bytes(&tinygpt_gpu::ops::argmax::HEAD_SAMPLE_PICK);
    assert!(
        head > 8_192,
        "the fused head's {head} bytes: the count reads nothing"
    );
    for src in DECODE_PERSISTENT[1].all() {
        assert_eq!(workgroup_bytes(src), PERSISTENT_WIDE_BYTES, "{}", src.key);
        assert_eq!(invocations(src), PERSISTENT_WIDE_INVOCATIONS, "{}", src.key);
    }
    // With a pick: the seeded one's bytes what the host checks, the greedy
    // one's fewer; the wide ones as wide.
    for (width, sources) in DECODE_PERSISTENT_PICK.iter().enumerate() {
        let want = PERSISTENT_PICK_BYTES[width];
        for src in sources[0].all() {
            assert!(workgroup_bytes(src) < want, "{}", src.key);
        }
        for src in sources[1].all() {
            assert_eq!(workgroup_bytes(src), want, "{}", src.key);
        }
        for src in sources.iter().flat_map(|s| s.all()) {
            let wg = [256, PERSISTENT_WIDE_INVOCATIONS][width];
            assert_eq!(invocations(src), wg, "{}", src.key);
        }
    }
}

/// WebGPU's default storage buffers a shader stage, what browsers offer on
/// most adapters: every pipeline binds at most this many, but the
/// decoder's fused head and the persistent kernel with its pick, which
/// bind what `HEAD_PICK_STORAGE_BUFFERS` and
/// `PERSISTENT_PICK_STORAGE_BUFFERS` say and which the host binds only
/// where the device offers that many.
const WEBGPU_STORAGE_BUFFERS: usize = 8;

#[test]
fn every_pipeline_binds_what_browsers_offer_but_the_fused_head() {
    use tinygpt_gpu::ops::argmax::{HEAD_GREEDY_PICK, HEAD_PICK_STORAGE_BUFFERS, HEAD_SAMPLE_PICK};
    use tinygpt_gpu::ops::persistent::{DECODE_PERSISTENT_PICK, PERSISTENT_PICK_STORAGE_BUFFERS};
    let mut fused = vec![HEAD_GREEDY_PICK.key, HEAD_SAMPLE_PICK.key];
    fused.extend(
        DECODE_PERSISTENT_PICK
            .iter()
            .flatten()
            .flat_map(|s| s.all())
            .map(|s| s.key),
    );
    // The producers' f16-copy forms run on the tensor-core path only,
    // whose device offers this many (`coop_matrix_usable`).
    let coop = tinygpt_gpu::context::COOP_PATH_STORAGE_BUFFERS as usize;
    let mut over = Vec::new();
    for src in all_kernels() {
        let n = storage_buffers(src);
        let copy16 = src.key.ends_with("_copy16") && n <= coop;
        if n > WEBGPU_STORAGE_BUFFERS && !fused.contains(&src.key) && !copy16 {
            over.push(format!("{}: {n}", src.key));
        }
    }
    assert!(over.is_empty(), "past {WEBGPU_STORAGE_BUFFERS}: {over:?}");
    let bound = HEAD_PICK_STORAGE_BUFFERS as usize;
    assert_eq!(storage_buffers(&HEAD_SAMPLE_PICK), bound);
    assert_eq!(storage_buffers(&HEAD_GREEDY_PICK), bound - 1);
    let bound = PERSISTENT_PICK_STORAGE_BUFFERS as usize;
    for [greedy, sample] in &DECODE_PERSISTENT_PICK {
        for src in sample.all() {
            assert_eq!(storage_buffers(src), bound, "{}", src.key);
        }
        for src in greedy.all() {
            assert_eq!(storage_buffers(src), bound - 1, "{}", src.key);
        }
    }
}

/// A JSON string of `s`.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// With `TINYGPT_DUMP_WGSL=<file>`, writes every pipeline (key, entry
/// point, constants, source) as JSON lines there, for compiling them in a
/// browser's WebGPU (`web/e2e/compile.mjs`); otherwise does nothing.
#[test]
fn dump_every_pipeline_for_a_browser() {
    let Ok(path) = std::env::var("TINYGPT_DUMP_WGSL") else {
        return;
    };
    let mut out = String::new();
    for src in all_kernels() {
        let constants: Vec<String> = src
            .constants
            .iter()
            .map(|&(k, v)| format!("{}: {v}", json_str(k)))
            .collect();
        out.push_str(&format!(
            "{{\"key\": {}, \"entry\": {}, \"constants\": {{{}}}, \"invocations\": {}, \"workgroup_bytes\": {}, \"storage_buffers\": {}, \"wgsl\": {}}}\n",
            json_str(src.key),
            json_str(src.entry),
            constants.join(", "),
            invocations(src),
            workgroup_bytes(src),
            storage_buffers(src),
            json_str(src.wgsl)
        ));
    }
    std::fs::write(path, out).unwrap();
}
