// A barrier across every workgroup of a dispatch, for persistent kernels
// whose workgroups are all resident at once. The including shader declares
// `sync: array<atomic<u32>>` (three words, zero at first):
//   sync[0]  arrivals at the current barrier in its low 16 bits, barriers
//            completed in its high 16; the workgroup arriving last resets
//            the count and advances the generation in one add, the others
//            wait for the generation to move — so the word is back to a
//            count of zero after every barrier, and dispatches chain.
//   sync[1]  set when a wait gave up after SPIN_LIMIT loads: the
//            workgroups were not all resident (a CPU implementation runs
//            them a few at a time), and what the dispatch wrote is void.
// storageBarrier() is a control barrier with device-scope acquire/release
// on storage memory: the workgroup's writes are visible before its first
// invocation arrives, and its reads after the wait see every other
// workgroup's writes before theirs.

const SPIN_LIMIT: u32 = 4000000u;

fn grid_sync(lid: u32, groups: u32) {
    storageBarrier();
    if (lid == 0u) {
        let old = atomicAdd(&sync[0], 1u);
        if ((old & 0xffffu) == groups - 1u) {
            atomicAdd(&sync[0], 0x10000u - groups);
        } else {
            let generation = old >> 16u;
            for (var spins = 0u; (atomicLoad(&sync[0]) >> 16u) == generation; spins++) {
                if (spins == SPIN_LIMIT) {
                    atomicStore(&sync[1], 1u);
                    break;
                }
            }
        }
    }
    storageBarrier();
}
