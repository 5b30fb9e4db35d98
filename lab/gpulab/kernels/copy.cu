// Copy kernels for the bandwidth probes (hbm_bandwidth, occupancy_bandwidth).
//
// Both move 16 bytes (one float4) per load and per store. A float4 copy moves
// bits, never arithmetic, so the copy is exact for any data.

// The grid-stride copy: any grid covers any length, one float4 in flight per
// thread per iteration. How many bytes an SM keeps in flight, and so the
// bandwidth, grows with the number of resident warps: this is the kernel
// occupancy_bandwidth sweeps. Launched as one full wave (every SM filled to
// its thread limit) it reached about 0.93 of cudaMemcpy on the project's H200,
// and unrolling it (four loads in flight per thread, with or without
// streaming or L2 hints), giving each block a contiguous chunk, or staging
// through shared memory with TMA bulk copies did not close the gap.
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

// The tiled copy: one float4 per thread and no loop, so the grid must have a
// thread for every float4 (launch ceil(n / blockDim.x) blocks). Each block
// copies one contiguous tile and retires, and the block scheduler hands the
// SM the next tile. On the project's H200 this matched cudaMemcpy
// device-to-device (1.00 of it with 128 or 256 threads per block, 4 GiB
// buffers), where the one-wave grid-stride copy above stays near 0.93.
// PyTorch's elementwise kernels have the same shape (a contiguous tile per
// block, a grid as large as the data) and reached 0.98 in the same
// experiment. Why the one-wave loop loses is not measured here.
extern "C" __global__ void copy_float4_tiles(const float4* __restrict__ src,
                                             float4* __restrict__ dst,
                                             unsigned long long n)
{
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        dst[i] = src[i];
    }
}
