// Pointer chase for the pointer_chase_latency probe (and the P2P chase of
// p2p_bandwidth): the latency of one load.
//
// One thread follows a chain of pointers, p = *p: each load's address is the
// value the previous load returned, so no two loads overlap and the time per
// step is the latency of the level of the memory hierarchy that holds the
// footprint. The table is a random cycle through lines 128 bytes apart (the
// first 8 bytes of each line hold the address of the next), so neighbouring
// steps never share a cache line and no prefetcher can guess the next address.
//
// Nothing but the load stands between one load's return and the next load's
// issue: the loaded value is the next address (in SASS, LD.E.64 R, [R] after
// LD.E.64 R, [R]). A chase of indices, j = next[j], puts a multiply-add on
// that path at every step (IMAD.WIDE.U32: next + 4 * j, then the load): this
// probe chased indices until issue 27 and read 39.6 cycles at L1 on an H100
// and an H200, where gpu-benches' pure chase read 34.0 on the same GPU. The
// loop counter does not depend on the loads, so its instructions issue while
// a load is in flight and cost nothing.
//
// warm_steps loads run first, untimed (they bring a footprint that fits into
// the caches, L1 included: it is this SM's, so the warm-up must run in the
// same launch); then `steps` loads run between two reads of the SM's cycle
// counter. The address reached is written back, so the host can check that
// the chase really walked the cycle it built.
//
// The loads are plain (no const __restrict__, no volatile): generic loads
// that take the default path through L1, as ordinary loads in a kernel do.

extern "C" __global__ void pointer_chase(void** start,
                                         unsigned long long warm_steps,
                                         unsigned long long steps,
                                         unsigned long long* out_address,
                                         long long* out_cycles)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) {
        return;
    }
    void** p = start;
    for (unsigned long long i = 0; i < warm_steps; ++i) {
        p = static_cast<void**>(*p);
    }
    const long long t0 = clock64();
    for (unsigned long long i = 0; i < steps; ++i) {
        p = static_cast<void**>(*p);
    }
    // The store below needs p, so the last load has returned before it runs.
    out_address[0] = reinterpret_cast<unsigned long long>(p);
    const long long t1 = clock64();
    out_cycles[0] = t1 - t0;
}
