// Issue 10: which side pays for the column walk, reads or writes? The 64 x 64 tile's reads alone
// (a sum per thread, kept only if it hits a value it never does) and its writes alone (a fill),
// tiles down columns and along rows, 8192 x 8192 floats; GB/s of the bytes each moves, and the
// ratio to the memcpy's GB/s (reads + writes) in the same call. The fills are checked in full.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
template <int ORDER> __device__ void origin(int n, int& r0, int& c0) {
  int T = n / 64, b = blockIdx.x;
  c0 = ORDER == 0 ? (b / T) * 64 : (b % T) * 64; r0 = ORDER == 0 ? (b % T) * 64 : (b / T) * 64;
}
template <int ORDER> __global__ void __launch_bounds__(512) rd(const float* __restrict__ in, float* __restrict__ sink, int n) {
  int r0, c0; origin<ORDER>(n, r0, c0); int tx = threadIdx.x, ty = threadIdx.y;
  float s = 0;
#pragma unroll
  for (int k = 0; k < 4; k++) { float2 v = __ldg((const float2*)&in[(size_t)(r0 + ty + 16 * k) * n + c0 + 2 * tx]); s += v.x * v.y; }
  if (s == -1.5f) sink[blockIdx.x] = s;
}
template <int ORDER> __global__ void __launch_bounds__(512) wr(float* __restrict__ out, int n) {
  int r0, c0; origin<ORDER>(n, r0, c0); int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int k = 0; k < 4; k++) { size_t i = (size_t)(r0 + ty + 16 * k) * n + c0 + 2 * tx; *(float2*)&out[i] = make_float2((float)(i % 1000003), (float)((i + 1) % 1000003)); }
}
int main() {
  const int n = 8192; const size_t m = (size_t)n * n; const int blocks = (n / 64) * (n / 64);
  float *a, *b, *sink; cudaMalloc(&a, m * 4); cudaMalloc(&b, m * 4); cudaMalloc(&sink, blocks * 4);
  std::vector<float> h(m); for (size_t i = 0; i < m; i++) h[i] = (float)((i * 2654435761u) % 1000003) * 1e-6f + 0.5f;
  cudaMemcpy(a, h.data(), m * 4, cudaMemcpyHostToDevice);
  dim3 t(32, 16);
  for (int round = 0; round < 3; round++) {
    float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
    double gm = 2.0 * m * 4 / mem / 1e6;
    auto rep = [&](const char* name, float ms) { double g = m * 4 / ms / 1e6; printf("trrw %-12s %8.1f us %7.1f GB/s %6.2f%% of memcpy GB/s\n", name, ms * 1e3, g, 100 * g / gm); fflush(stdout); };
    printf("trrw memcpy %.1f us %.1f GB/s\n", mem * 1e3, gm);
    rep("read down", median_ms([&] { rd<0><<<blocks, t>>>(a, sink, n); }));
    rep("read along", median_ms([&] { rd<1><<<blocks, t>>>(a, sink, n); }));
    rep("write down", median_ms([&] { wr<0><<<blocks, t>>>(b, n); }));
    rep("write along", median_ms([&] { wr<1><<<blocks, t>>>(b, n); }));
  }
  for (int o = 0; o < 2; o++) {
    cudaMemset(b, 0xff, m * 4); if (o == 0) wr<0><<<blocks, t>>>(b, n); else wr<1><<<blocks, t>>>(b, n);
    std::vector<float> out(m); cudaMemcpy(out.data(), b, m * 4, cudaMemcpyDeviceToHost); size_t bad = 0;
    for (size_t i = 0; i < m; i++) bad += out[i] != (float)(i % 1000003);
    printf("check fill order %d: %zu wrong\n", o, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
