// Strided reads for the stride_sweep probe: what coalescing is worth.
//
// Thread i of the grid reads elements i, i + G, i + 2G ... (G = threads in
// the grid) of a virtual array whose element k lives at word k * stride of
// src. At stride 1 a warp's 32 loads fall in 128 contiguous bytes; at stride
// 32 each lands in its own 128-byte line, so the memory moves a whole 32-byte
// sector for every 4 useful bytes.
//
// Each thread sums what it read (unsigned, wrapping: exact in any order) and
// writes the sum to partial[thread], so the loads cannot be optimised away
// and the host can check the total against a reference sum.
#define STRIDE_UNROLL 8

extern "C" __global__ void read_strided(const unsigned int* __restrict__ src,
                                        unsigned long long n_useful,
                                        unsigned long long stride,
                                        unsigned int* __restrict__ partial)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long i = thread;
    unsigned int acc = 0;
    for (; i + (STRIDE_UNROLL - 1) * step < n_useful; i += STRIDE_UNROLL * step) {
        unsigned int v[STRIDE_UNROLL];
#pragma unroll
        for (int u = 0; u < STRIDE_UNROLL; ++u) {
            v[u] = src[(i + u * step) * stride];
        }
#pragma unroll
        for (int u = 0; u < STRIDE_UNROLL; ++u) {
            acc += v[u];
        }
    }
    for (; i < n_useful; i += step) {
        acc += src[i * stride];
    }
    partial[thread] = acc;
}
