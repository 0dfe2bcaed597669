// The generic H x W tile the transpose sweeps share (trs.cu, trs2.cu): input rows x cols, float2
// accesses, T threads; ORDER 0 = tiles down columns, 1 = along rows. TRANS 0 = copy the tile to
// the same place (no shared memory), 1 = transpose through a (W + 1)-pitch shared tile.
#pragma once
#include <vector>
#include <cuda_runtime.h>
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
template <int H, int W, int ORDER, int TRANS, int T = 256> __global__ void __launch_bounds__(T) tt(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  extern __shared__ float t[];
  constexpr int P = W + 1, N2 = H * W / 2 / T;
  int RT = rows / H, CT = cols / W, b = blockIdx.x, tid = threadIdx.x;
  int c0 = ORDER == 0 ? (b / RT) * W : (b % CT) * W, r0 = ORDER == 0 ? (b % RT) * H : (b / CT) * H;
  float2 v[N2];
#pragma unroll
  for (int k = 0; k < N2; k++) { int q = tid + k * T, r = q / (W / 2), c = 2 * (q % (W / 2)); v[k] = __ldg((const float2*)&in[(size_t)(r0 + r) * cols + c0 + c]); }
  if (TRANS == 0) {
#pragma unroll
    for (int k = 0; k < N2; k++) { int q = tid + k * T, r = q / (W / 2), c = 2 * (q % (W / 2)); *(float2*)&out[(size_t)(r0 + r) * cols + c0 + c] = v[k]; }
    return;
  }
#pragma unroll
  for (int k = 0; k < N2; k++) { int q = tid + k * T, r = q / (W / 2), c = 2 * (q % (W / 2)); t[r * P + c] = v[k].x; t[r * P + c + 1] = v[k].y; }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < N2; k++) { int q = tid + k * T, oc = q / (H / 2), orr = 2 * (q % (H / 2)); v[k].x = t[orr * P + oc]; v[k].y = t[(orr + 1) * P + oc]; }
#pragma unroll
  for (int k = 0; k < N2; k++) { int q = tid + k * T, oc = q / (H / 2), orr = 2 * (q % (H / 2)); *(float2*)&out[(size_t)(c0 + oc) * rows + r0 + orr] = v[k]; }
}
template <int H, int W, int ORDER, int TRANS, int T = 256> float run(const float* a, float* b, int R, int C) {
  int smem = TRANS ? H * (W + 1) * 4 : 0;
  cudaFuncSetAttribute(tt<H, W, ORDER, TRANS, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  return median_ms([&] { tt<H, W, ORDER, TRANS, T><<<(R / H) * (C / W), T, smem>>>(a, b, R, C); });
}
template <int H, int W, int ORDER, int T = 256> size_t check(const float* a, float* b, int R, int C, const std::vector<float>& h) {
  size_t m = (size_t)R * C; cudaMemset(b, 0xff, m * 4);
  int smem = H * (W + 1) * 4; cudaFuncSetAttribute(tt<H, W, ORDER, 1, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  tt<H, W, ORDER, 1, T><<<(R / H) * (C / W), T, smem>>>(a, b, R, C);
  size_t bad = wrong_transpose(b, h, R, C);
  return bad;
}
