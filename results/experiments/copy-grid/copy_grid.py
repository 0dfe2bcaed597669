# copy_grid.py ROUNDS: how many 16-byte vectors a thread, and which grid, bring a float4 copy to
# the driver's memcpy at 2^26 and 2^28 floats: one-trip grids of 1, 2 and 4 vectors a thread
# against persistent grids (equal contiguous shares, or grid-striding), beside cudaMemcpyAsync
# DtoD on the same buffers, every element checked.
import os, sys, numpy as np, cupy as cp
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
src = r'''
extern "C" __global__ void onetrip(const float4* __restrict__ a, float4* __restrict__ b, long long v) {
    // 2 vectors a thread, 512 a block (the library's coalescing_vec4, blocks_per_sm = 0)
    long long base = (long long)blockIdx.x * 512 + threadIdx.x;
    float4 x0, x1;
    if (base < v) x0 = a[base];
    if (base + 256 < v) x1 = a[base + 256];
    if (base < v) b[base] = x0;
    if (base + 256 < v) b[base + 256] = x1;
}
extern "C" __global__ void onetrip4(const float4* __restrict__ a, float4* __restrict__ b, long long v) {
    long long base = (long long)blockIdx.x * 1024 + threadIdx.x;
    float4 x[4];
    #pragma unroll
    for (int k = 0; k < 4; k++) if (base + 256 * k < v) x[k] = a[base + 256 * k];
    #pragma unroll
    for (int k = 0; k < 4; k++) if (base + 256 * k < v) b[base + 256 * k] = x[k];
}
extern "C" __global__ void onetrip1(const float4* __restrict__ a, float4* __restrict__ b, long long v) {
    long long i = (long long)blockIdx.x * 256 + threadIdx.x;
    if (i < v) b[i] = a[i];
}
extern "C" __global__ void even(const float4* __restrict__ a, float4* __restrict__ b, long long v) {
    // persistent grid, every block an equal contiguous share, 2 in flight
    long long per = (v + gridDim.x - 1) / gridDim.x;
    long long lo = (long long)blockIdx.x * per, hi = min(v, lo + per);
    for (long long i = lo + threadIdx.x; i < hi; i += 512) {
        float4 x0 = a[i]; float4 x1; bool two = i + 256 < hi;
        if (two) x1 = a[i + 256];
        b[i] = x0; if (two) b[i + 256] = x1;
    }
}
extern "C" __global__ void stride(const float4* __restrict__ a, float4* __restrict__ b, long long v) {
    // persistent grid-stride by vector, 2 in flight
    long long step = (long long)gridDim.x * 256;
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < v; i += 2 * step) {
        float4 x0 = a[i]; float4 x1; bool two = i + step < v;
        if (two) x1 = a[i + step];
        b[i] = x0; if (two) b[i + step] = x1;
    }
}
'''
mod = cp.RawModule(code=src, options=("-std=c++17",))
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
for log2 in (26, 28):
    n = 1 << log2; v = n // 4
    x = cp.random.standard_normal(n, dtype=cp.float32); y = cp.empty_like(x)
    nb = x.nbytes
    mc = lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nb, cp.cuda.runtime.memcpyDeviceToDevice, 0)
    ks = {
        "onetrip": (mod.get_function("onetrip"), (v + 511) // 512),
        "onetrip4": (mod.get_function("onetrip4"), (v + 1023) // 1024),
        "onetrip1": (mod.get_function("onetrip1"), (v + 255) // 256),
        "even8": (mod.get_function("even"), sms * 8),
        "even16": (mod.get_function("even"), sms * 16),
        "stride8": (mod.get_function("stride"), sms * 8),
        "stride32": (mod.get_function("stride"), sms * 32),
    }
    for rnd in range(int(sys.argv[1])):
        tm = med(mc); line = f"2^{log2} round {rnd} memcpy {2*nb/tm/1e9:.0f} GB/s"
        for name, (f, grid) in ks.items():
            run = lambda: f((grid,), (256,), (x, y, np.int64(v)))
            y.fill(np.nan); run(); cp.cuda.Device().synchronize()
            assert bool((y == x).all()), name
            tw = med(run); line += f" | {name} {100*tm/tw:.2f}%"
        print(line, flush=True)
