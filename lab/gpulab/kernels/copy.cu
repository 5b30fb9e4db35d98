// Copy kernels for the bandwidth probes (hbm_bandwidth, occupancy_bandwidth).
//
// Both move 16 bytes (one float4) per load and per store, over a grid-stride
// loop, so one launch copies any length with any grid. A float4 copy moves
// bits, never arithmetic, so the copy is exact for any data.

// The simple copy: one float4 in flight per thread per iteration. How many
// bytes an SM keeps in flight, and so the bandwidth, then grows with the
// number of resident warps: this is the kernel occupancy_bandwidth sweeps.
extern "C" __global__ void copy_float4(const float4* __restrict__ src,
                                       float4* __restrict__ dst,
                                       unsigned long long n)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += step) {
        dst[i] = src[i];
    }
}

// The unrolled copy: four independent float4 loads issued before their
// stores, so each thread keeps 64 bytes in flight, with streaming cache hints
// (evict-first) because no byte is used twice. A tail loop finishes the last
// partial round. (On the project's H200 this was not faster than the simple
// copy at full occupancy: 0.91 against 0.93 of cudaMemcpy.)
#define COPY_UNROLL 4

extern "C" __global__ void copy_float4_unrolled(const float4* __restrict__ src,
                                                float4* __restrict__ dst,
                                                unsigned long long n)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (COPY_UNROLL - 1) * step < n; i += COPY_UNROLL * step) {
        float4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            v[u] = __ldcs(src + i + u * step);
        }
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            __stcs(dst + i + u * step, v[u]);
        }
    }
    for (; i < n; i += step) {
        dst[i] = src[i];
    }
}

// The same four-deep unrolling with plain loads and stores: the streaming
// hints above may cost more than they save, and this isolates the unrolling.
// (On the project's H200: 3912-3925 GB/s, against 3938 for the simple copy
// and 4246 for cudaMemcpy in the same run.)
extern "C" __global__ void copy_float4_ilp(const float4* __restrict__ src,
                                           float4* __restrict__ dst,
                                           unsigned long long n)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (COPY_UNROLL - 1) * step < n; i += COPY_UNROLL * step) {
        float4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            v[u] = src[i + u * step];
        }
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            dst[i + u * step] = v[u];
        }
    }
    for (; i < n; i += step) {
        dst[i] = src[i];
    }
}

// Each block copies one contiguous chunk of the array, four float4 per thread
// in flight: the blocks' streams then stay apart in DRAM instead of
// interleaving across the whole grid's window. (On the project's H200:
// 3810-3931 GB/s, no better than the simple copy.)
extern "C" __global__ void copy_float4_chunked(const float4* __restrict__ src,
                                               float4* __restrict__ dst,
                                               unsigned long long n)
{
    const unsigned long long per_round = (unsigned long long)blockDim.x * COPY_UNROLL;
    unsigned long long chunk = (n + gridDim.x - 1) / gridDim.x;
    chunk = (chunk + per_round - 1) / per_round * per_round;
    const unsigned long long begin = (unsigned long long)blockIdx.x * chunk;
    const unsigned long long end = begin + chunk < n ? begin + chunk : n;
    unsigned long long i = begin + threadIdx.x;
    for (; i + (COPY_UNROLL - 1) * blockDim.x < end; i += per_round) {
        float4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            v[u] = src[i + u * blockDim.x];
        }
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            dst[i + u * blockDim.x] = v[u];
        }
    }
    for (; i < end; i += blockDim.x) {
        dst[i] = src[i];
    }
}
