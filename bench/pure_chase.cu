// The pure chase of bench/probes.py: the smallest kernel that measures load
// latency, to hold the pointer_chase_latency probe's L1 plateau against.
//
// Modelled on gpu-benches' gpu-latency (te42kyfo/gpu-benches): p = *p and
// nothing else, 32 loads to a turn of the loop. It differs only where one
// clock64 pair in one launch needs it: the warm-up lap runs in the same launch
// (L1 belongs to the SM the launch runs on) and the timed loads run between
// two reads of the SM's cycle counter, not under a host timer.

extern "C" __global__ void pure_chase(void** p, long long warm, long long steps,
                                      void** reached, long long* cycles)
{
#pragma unroll 1
    for (long long i = 0; i < warm; i += 32) {
#pragma unroll
        for (int u = 0; u < 32; ++u) {
            p = (void**)*p;
        }
    }
    const long long t0 = clock64();
#pragma unroll 1
    for (long long i = 0; i < steps; i += 32) {
#pragma unroll
        for (int u = 0; u < 32; ++u) {
            p = (void**)*p;
        }
    }
    reached[0] = p;
    cycles[0] = clock64() - t0;
}
