// The f16 copy a producer writes beside its f32 output, so that the
// tensor-core product reading that output as its op(A) stages nothing
// (ops/matmul/coop_stage.rs, `StagedRows::for_producer`): this file,
// prepended to the producer's source, holds the module's `enable f16;`;
// copy16_write.wgsl, appended, the copy's binding and writes. The other
// form, copy16_none.wgsl (appended), writes nothing. (The tensor-core
// attention kernels enable f16 themselves and append copy16_write.wgsl.)

enable f16;
