// Pointer chase for the pointer_chase_latency probe: the latency of one load.
//
// One thread follows next[]: each load's address is the value the previous
// load returned, so no two loads overlap and the time per step is the latency
// of the level of the memory hierarchy that holds the footprint. The table is
// a random cycle through lines 128 bytes apart, so neighbouring steps never
// share a cache line and no prefetcher can guess the next address.
//
// warm_steps loads run first, untimed (they bring a footprint that fits into
// the caches); then `steps` loads run between two reads of the SM's cycle
// counter. The index reached is written back, so the host can check that the
// chase really walked the cycle it built.
//
// The loads are plain (no const __restrict__, no volatile): they take the
// default path through L1, as ordinary loads in a kernel do.

extern "C" __global__ void pointer_chase(const unsigned int* next,
                                         unsigned int start,
                                         unsigned long long warm_steps,
                                         unsigned long long steps,
                                         unsigned int* out_index,
                                         long long* out_cycles)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) {
        return;
    }
    unsigned int j = start;
    for (unsigned long long i = 0; i < warm_steps; ++i) {
        j = next[j];
    }
    const long long t0 = clock64();
    for (unsigned long long i = 0; i < steps; ++i) {
        j = next[j];
    }
    // The store below needs j, so the last load has returned before it runs.
    out_index[0] = j;
    const long long t1 = clock64();
    out_cycles[0] = t1 - t0;
}
