// FP32 FMA throughput for the fp32_peak probe.
//
// Each thread advances FMA_CHAINS independent chains v = v * mul + add, so
// every scheduler always has FMAs whose inputs are ready; the loop is
// unrolled so that loop bookkeeping takes few issue slots. mul and add arrive
// at run time, so the compiler must issue real FMAs. With mul = 1 and add =
// 0.5 every value stays an exact multiple of 0.5 (below 2^23), so the result
// is known exactly: chain c ends at c + 0.5 * iters, and each thread writes
// the sum of its chains, 28 + 4 * iters for 8 chains.
#define FMA_CHAINS 8

extern "C" __global__ void fma_chains(float* out, float mul, float add, unsigned int iters)
{
    float v[FMA_CHAINS];
#pragma unroll
    for (int c = 0; c < FMA_CHAINS; ++c) {
        v[c] = (float)c;
    }
#pragma unroll 16
    for (unsigned int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < FMA_CHAINS; ++c) {
            v[c] = fmaf(v[c], mul, add);
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < FMA_CHAINS; ++c) {
        sum += v[c];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
