// The trusted kernel of the warp-divergence exercise (gpulab.grading.checks.reference.warp_divergence).
//
// Thread i starts at x = (i % 1024) / 1024, takes `uniform_iters` steps of path A
// with every lane of its warp, then `iters` steps of the path its byte of
// `take_b` chooses: path A is x = fmaf(x, a, b), path B is x = fmaf(x, b, a).
// One FMA a step on either path, so the two cost the same; a warp whose lanes
// disagree runs one path and then the other.
//
// The paths are separate functions the compiler may not inline (as in the
// warp_divergence probe's divergence.cu), so they stay two instruction streams:
// inlined, two loops that differ only in operands could be merged into one loop
// over selected constants, and then no lane would wait for another. `take_b`
// comes from memory, so the compiler cannot know which lanes take which path.

__device__ __noinline__ float path_a(float x, float a, float b, unsigned int iters)
{
    for (unsigned int k = 0; k < iters; ++k) {
        x = fmaf(x, a, b);
    }
    return x;
}

__device__ __noinline__ float path_b(float x, float a, float b, unsigned int iters)
{
    for (unsigned int k = 0; k < iters; ++k) {
        x = fmaf(x, b, a);
    }
    return x;
}

extern "C" __global__ void two_paths(float* out,
                                     const unsigned char* take_b,
                                     unsigned int n,
                                     float a,
                                     float b,
                                     unsigned int uniform_iters,
                                     unsigned int iters)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float x = (float)(i % 1024u) / 1024.0f;
    x = path_a(x, a, b, uniform_iters);
    if (take_b[i]) {
        x = path_b(x, a, b, iters);
    } else {
        x = path_a(x, a, b, iters);
    }
    out[i] = x;
}
