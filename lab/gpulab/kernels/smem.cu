// Shared-memory kernels for the smem_latency and smem_bank_conflicts probes.

// Latency: one thread chases through a table copied into shared memory, each
// load's address being the value of the one before, timed with the SM's cycle
// counter. n must not exceed SMEM_CHASE_WORDS.
#define SMEM_CHASE_WORDS 4096

extern "C" __global__ void smem_chase(const unsigned int* __restrict__ table,
                                      unsigned int n,
                                      unsigned long long steps,
                                      unsigned int* out_index,
                                      long long* out_cycles)
{
    __shared__ unsigned int s[SMEM_CHASE_WORDS];
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) {
        s[i] = table[i];
    }
    __syncthreads();
    if (threadIdx.x != 0) {
        return;
    }
    unsigned int j = 0;
    const long long t0 = clock64();
    for (unsigned long long i = 0; i < steps; ++i) {
        j = s[j];
    }
    out_index[0] = j;
    const long long t1 = clock64();
    out_cycles[0] = t1 - t0;
}

// Bank conflicts: shared memory has 32 banks of 4-byte words; word w lives in
// bank w % 32. Lane l of every warp loads word l * stride (or word 0 for all
// lanes when broadcast is set) again and again. The table holds s[w] = w, so
// each load returns its own address: the loads form a dependent chain the
// compiler cannot hoist, and each lane keeps hitting the same bank. Lanes that
// hit different words of one bank are served one after another (a conflict);
// lanes that read the same word share one access (a broadcast).
// Stride 33 is the padded layout: a 32 x 32 tile stored with rows of 33
// words, read down a column, touches every bank once.
#define BANK_WORDS (32 * 33)

extern "C" __global__ void smem_bank_access(const unsigned int* __restrict__ table,
                                            unsigned int stride,
                                            unsigned int broadcast,
                                            unsigned int iters,
                                            unsigned int* out)
{
    __shared__ unsigned int s[BANK_WORDS];
    for (unsigned int i = threadIdx.x; i < BANK_WORDS; i += blockDim.x) {
        s[i] = table[i];
    }
    __syncthreads();
    const unsigned int lane = threadIdx.x & 31u;
    unsigned int j = broadcast ? 0u : (lane * stride) % BANK_WORDS;
#pragma unroll 16
    for (unsigned int i = 0; i < iters; ++i) {
        j = s[j];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = j;
}
