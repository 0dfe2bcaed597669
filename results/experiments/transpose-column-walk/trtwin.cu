// The 64 x 64 float2 transpose (the wide kernel's CUDA C twin: read-only unguarded loads, tiles
// down columns, one block a tile on a 1-D grid) and 128 x 128 float2 tiles; compiled by NVRTC
// from t128.py and trcmp.py.
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
