# t128.py ROUNDS: the 64x64 float2 transpose (the wide kernel's CUDA C twin, tiles down columns)
# against a 128x128 float2 tile (3 blocks an SM, 192 KB in flight an SM instead of 64), both
# shapes, each checked element by element, ratios to the device memcpy measured beside them.
import sys, numpy as np, cupy as cp
from timing import med
src = r'''
template <int T, int ROWS> __device__ void tr(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ float t[];
  constexpr int P = T + 1, HALVES = T / 64, STEPS = T * HALVES / ROWS;
  int rt = rows / T; int b = blockIdx.x; int c0 = (b / rt) * T, r0 = (b % rt) * T;
  int tx = threadIdx.x, ty = threadIdx.y, h = ty % HALVES, ry = ty / HALVES;
  float2 v[STEPS];
#pragma unroll
  for (int j = 0; j < STEPS; j++) v[j] = *(const float2*)&in[(size_t)(r0 + ry + j * (ROWS / HALVES)) * cols + c0 + 64 * h + 2 * tx];
#pragma unroll
  for (int j = 0; j < STEPS; j++) { int r = ry + j * (ROWS / HALVES); t[r * P + 64 * h + 2 * tx] = v[j].x; t[r * P + 64 * h + 2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < STEPS; j++) { int c = ry + j * (ROWS / HALVES); int r = 64 * h + 2 * tx; v[j].x = t[r * P + c]; v[j].y = t[(r + 1) * P + c]; }
#pragma unroll
  for (int j = 0; j < STEPS; j++) { int c = ry + j * (ROWS / HALVES); *(float2*)&out[(size_t)(c0 + c) * rows + r0 + 64 * h + 2 * tx] = v[j]; }
}
extern "C" __global__ void t64(const float* in, float* out, int rows, int cols) { tr<64, 16>(in, out, rows, cols); }
extern "C" __global__ void __launch_bounds__(512, 3) t128(const float* in, float* out, int rows, int cols) { tr<128, 16>(in, out, rows, cols); }
extern "C" __global__ void __launch_bounds__(1024, 2) t128b(const float* in, float* out, int rows, int cols) { tr<128, 32>(in, out, rows, cols); }
'''
mod = cp.RawModule(code=src, options=("-std=c++17",))
ks = {"t64": (mod.get_function("t64"), 64, (32, 16)), "t128": (mod.get_function("t128"), 128, (32, 16)), "t128b": (mod.get_function("t128b"), 128, (32, 32))}
for f, t, _ in ks.values():
    f.max_dynamic_shared_size_bytes = t * (t + 1) * 4
bufs = {}
for rows, cols in ((8192, 8192), (4096, 16384)):
    bufs[(rows, cols)] = (cp.random.standard_normal((rows, cols), dtype=cp.float32), cp.empty((cols, rows), dtype=cp.float32))
for rnd in range(int(sys.argv[1])):
    for (rows, cols), (x, y) in bufs.items():
        nb = x.nbytes
        mc = lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nb, cp.cuda.runtime.memcpyDeviceToDevice, 0)
        tm = med(mc); line = f"round {rnd} {rows}x{cols} memcpy {2*nb/tm/1e9:.0f}"
        for name, (f, t, blk) in ks.items():
            run = lambda: f(((rows // t) * (cols // t),), blk, (x, y, np.int32(rows), np.int32(cols)), shared_mem=t * (t + 1) * 4)
            y.fill(np.nan); run(); cp.cuda.Device().synchronize()
            assert bool((y == x.T).all()), name
            tw = med(run); line += f" | {name} {100*tm/tw:.2f}%"
        tm2 = med(mc); line += f" | memcpy after {2*nb/tm2/1e9:.0f}"
        print(line, flush=True)
