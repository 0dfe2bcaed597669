// Issue 10: block size, occupancy and tile order of the 64 x 64 transpose. A generic H x W tile (input rows x cols), float2
// accesses, 256 threads; ORDER 0 = tiles down columns, 1 = along rows. TRANS 0 = copy the tile
// to the same place (no shared memory), 1 = transpose through a (W + 1)-pitch shared tile.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "timing.cuh"
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
  size_t m = (size_t)R * C; std::vector<float> o(m); cudaMemset(b, 0xff, m * 4);
  int smem = H * (W + 1) * 4; cudaFuncSetAttribute(tt<H, W, ORDER, 1, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  tt<H, W, ORDER, 1, T><<<(R / H) * (C / W), T, smem>>>(a, b, R, C);
  cudaMemcpy(o.data(), b, m * 4, cudaMemcpyDeviceToHost); size_t bad = 0;
  for (size_t r = 0; r < (size_t)R; r++) for (size_t c = 0; c < (size_t)C; c++) bad += o[c * R + r] != h[r * C + c];
  return bad;
}

template <int ORDER, int TRANS, int T> float runo(const float* a, float* b, int R, int C, int smem) {
  cudaFuncSetAttribute(tt<64, 64, ORDER, TRANS, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  return median_ms([&] { tt<64, 64, ORDER, TRANS, T><<<(R / 64) * (C / 64), T, smem>>>(a, b, R, C); });
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4);
  std::vector<float> h(n); for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000003);
  cudaMemcpy(a, h.data(), n * 4, cudaMemcpyHostToDevice);
  const int tile = 64 * 65 * 4;
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C;
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, int per, float ms) { printf("trs2 %5dx%-5d %-16s %2d/SM %7.1f us %6.2f%%\n", R, C, name, per, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      // blocks an SM forced by shared memory: 227 KB / per
      for (int per : {2, 3, 4, 6, 8}) { int smem = std::max(tile, 227 * 1024 / per - 1024);
        if (per <= 2) { rep("T down 1024t", per, runo<0, 1, 1024>(a, b, R, C, smem)); rep("T along 1024t", per, runo<1, 1, 1024>(a, b, R, C, smem)); }
        if (per <= 4) { rep("T down 512t", per, runo<0, 1, 512>(a, b, R, C, smem)); rep("T along 512t", per, runo<1, 1, 512>(a, b, R, C, smem)); }
        rep("T down 256t", per, runo<0, 1, 256>(a, b, R, C, smem)); rep("T along 256t", per, runo<1, 1, 256>(a, b, R, C, smem));
        rep("copy down 256t", per, runo<0, 0, 256>(a, b, R, C, smem)); rep("copy along 256t", per, runo<1, 0, 256>(a, b, R, C, smem));
      }
      rep("T down 128t", 13, runo<0, 1, 128>(a, b, R, C, tile)); rep("T along 128t", 13, runo<1, 1, 128>(a, b, R, C, tile));
    }
  }
  int R = 4096, C = 16384;
  printf("check 64x64 256t %zu wrong\n", check<64, 64, 0>(a, b, R, C, h));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
