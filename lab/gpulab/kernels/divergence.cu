// Warp divergence for the warp_divergence probe.
//
// Every thread runs one of two paths of equal cost, chosen by its lane's bit
// in `mask`: clear takes path A, set takes path B. A warp whose lanes disagree
// runs both paths one after the other, with the lanes of the other path idle,
// so a 16/16 split or a single lane out costs about two paths' time.
//
// The paths are separate non-inlined functions so that the compiler cannot
// merge them into one branch-free sequence (which would hide the divergence);
// each is a chain of FMAs. The mask comes in at run time, so the compiler
// cannot know which lanes take which path either.
//
// Every lane first runs `uniform_iters` FMAs of path A together (no
// divergence), then `iters` FMAs on its own path: with uniform_iters = 9 *
// iters the split section is a tenth of the work, and the whole kernel slows
// by about a tenth, not by half.

__device__ __noinline__ float path_a(float x, float a, float b, unsigned int iters)
{
    for (unsigned int i = 0; i < iters; ++i) {
        x = fmaf(x, a, b);
    }
    return x;
}

__device__ __noinline__ float path_b(float x, float a, float b, unsigned int iters)
{
    for (unsigned int i = 0; i < iters; ++i) {
        x = fmaf(x, b, a);
    }
    return x;
}

extern "C" __global__ void divergent_paths(float* out,
                                           unsigned int mask,
                                           float a,
                                           float b,
                                           unsigned int uniform_iters,
                                           unsigned int iters)
{
    const unsigned int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int lane = threadIdx.x & 31u;
    float x = (float)(thread & 1023u) * (1.0f / 1024.0f);
    x = path_a(x, a, b, uniform_iters);
    if ((mask >> lane) & 1u) {
        x = path_b(x, a, b, iters);
    } else {
        x = path_a(x, a, b, iters);
    }
    out[thread] = x;
}
