// A kernel that keeps one thread busy for a set time, for the util_one_thread
// probe: NVML's "GPU utilisation" counts the time in which any kernel runs,
// so one thread on one SM reads like a kernel that fills the chip.
//
// Launch it as <<<1, 1>>>. The thread spins on the GPU's global nanosecond
// timer (%globaltimer) until `ns` have passed, counting its turns so the spin
// cannot be optimised away, then writes out[0] = the nanoseconds it ran and
// out[1] = the turns it made. The probe checks both.

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void spin_one_thread(unsigned long long ns,
                                           unsigned long long* out)
{
    const unsigned long long start = global_ns();
    unsigned long long now = start;
    unsigned long long turns = 0;
    while (now - start < ns) {
        ++turns;
        now = global_ns();
    }
    out[0] = now - start;
    out[1] = turns;
}
