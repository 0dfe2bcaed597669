// Issue 10: transpose margin past 97% of memcpy: persistent pipelined tiles, streaming loads
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define MEDIAN_REPS 31
#include "../common/timing.cuh"
// LD: 0 plain, 1 __ldcs, 2 __ldg(nc)
template <int LD> __device__ __forceinline__ float2 ld2(const float* p) {
  if (LD == 1) return __ldcs((const float2*)p); if (LD == 2) return __ldg((const float2*)p); return *(const float2*)p;
}
// the shipped design: one 64x64 tile a block, (32,16) threads, tiles down columns
template <int LD, bool CS> __global__ void __launch_bounds__(512) t64(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[64][65];
  int RT = rows / 64, b = blockIdx.x, c0 = (b / RT) * 64, r0 = (b % RT) * 64, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) v[j] = ld2<LD>(&in[(size_t)(r0 + ty + j * 16) * cols + c0 + 2 * tx]);
#pragma unroll
  for (int j = 0; j < 4; j++) { t[ty + j * 16][2 * tx] = v[j].x; t[ty + j * 16][2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 4; j++) { int c = ty + j * 16; v[j].x = t[2 * tx][c]; v[j].y = t[2 * tx + 1][c]; }
#pragma unroll
  for (int j = 0; j < 4; j++) { int c = ty + j * 16; float2* p = (float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx]; if (CS) __stcs(p, v[j]); else *p = v[j]; }
}
// persistent: block walks tiles b, b + grid, ..; the next tile's loads go out before this tile's stores
template <int ROWS> __global__ void __launch_bounds__(32 * ROWS) tpers(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[64][65];
  constexpr int S = 64 / ROWS;
  int RT = rows / 64, tiles = RT * (cols / 64), tx = threadIdx.x, ty = threadIdx.y;
  float2 v[S];
  int b = blockIdx.x;
  if (b >= tiles) return;
  { int c0 = (b / RT) * 64, r0 = (b % RT) * 64;
#pragma unroll
    for (int j = 0; j < S; j++) v[j] = *(const float2*)&in[(size_t)(r0 + ty + j * ROWS) * cols + c0 + 2 * tx]; }
  for (; b < tiles; b += gridDim.x) {
    int c0 = (b / RT) * 64, r0 = (b % RT) * 64;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < S; j++) { t[ty + j * ROWS][2 * tx] = v[j].x; t[ty + j * ROWS][2 * tx + 1] = v[j].y; }
    __syncthreads();
    int nb = b + gridDim.x;
    if (nb < tiles) { int nc0 = (nb / RT) * 64, nr0 = (nb % RT) * 64;
#pragma unroll
      for (int j = 0; j < S; j++) v[j] = *(const float2*)&in[(size_t)(nr0 + ty + j * ROWS) * cols + nc0 + 2 * tx]; }
#pragma unroll
    for (int j = 0; j < S; j++) { int c = ty + j * ROWS; float2 w; w.x = t[2 * tx][c]; w.y = t[2 * tx + 1][c];
      *(float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx] = w; }
  }
}
// two tiles a block, adjacent down a column (128 x 64), loads of both first
__global__ void __launch_bounds__(512) t2(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[128][65];
  int RT = rows / 128, b = blockIdx.x, c0 = (b / RT) * 64, r0 = (b % RT) * 128, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[8];
#pragma unroll
  for (int j = 0; j < 8; j++) v[j] = *(const float2*)&in[(size_t)(r0 + ty + j * 16) * cols + c0 + 2 * tx];
#pragma unroll
  for (int j = 0; j < 8; j++) { t[ty + j * 16][2 * tx] = v[j].x; t[ty + j * 16][2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 8; j++) { int c = ty + (j & 3) * 16, h = (j >> 2) * 64; v[j].x = t[h + 2 * tx][c]; v[j].y = t[h + 2 * tx + 1][c]; }
#pragma unroll
  for (int j = 0; j < 8; j++) { int c = ty + (j & 3) * 16, h = (j >> 2) * 64; *(float2*)&out[(size_t)(c0 + c) * rows + r0 + h + 2 * tx] = v[j]; }
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMemset(a, 1, n * 4);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(tpers<16>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  for (int round = 0; round < 2; round++) {
    float mem = median_ms([&] { cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice); });
    printf("round %d memcpy %.1f us\n", round, mem * 1e3);
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1], tiles = (R / 64) * (C / 64);
      auto rep = [&](const char* name, float ms) { printf("trp %5dx%-5d %-22s %.1f us %.2f%%\n", R, C, name, ms * 1e3, 100 * mem / ms); };
      rep("t64 (shipped)", median_ms([&] { t64<0, false><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t64 ldcs", median_ms([&] { t64<1, false><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t64 ldg", median_ms([&] { t64<2, false><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t64 ldcs stcs", median_ms([&] { t64<1, true><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t2 128x64", median_ms([&] { t2<<<tiles / 2, dim3(32, 16)>>>(a, b, R, C); }));
      for (int per : {4, 6, 8}) { char nm[64];
        snprintf(nm, 64, "persistent r16 %d/SM", per); rep(nm, median_ms([&] { tpers<16><<<per * sms, dim3(32, 16)>>>(a, b, R, C); }));
        snprintf(nm, 64, "persistent r8 %d/SM", per); rep(nm, median_ms([&] { tpers<8><<<per * sms, dim3(32, 8)>>>(a, b, R, C); }));
      }
      rep("persistent r8 16/SM", median_ms([&] { tpers<8><<<16 * sms, dim3(32, 8)>>>(a, b, R, C); }));
      rep("t64 (shipped) again", median_ms([&] { t64<0, false><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
    }
  }
  // correctness of the new ones on 8192^2
  std::vector<float> h(n), o(n); for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000003);
  cudaMemcpy(a, h.data(), n * 4, cudaMemcpyHostToDevice);
  int R = 4096, C = 16384; size_t bad = 0;
  for (int k = 0; k < 3; k++) {
    cudaMemset(b, 0xff, n * 4);
    if (k == 0) tpers<16><<<4 * sms, dim3(32, 16)>>>(a, b, R, C);
    if (k == 1) tpers<8><<<8 * sms, dim3(32, 8)>>>(a, b, R, C);
    if (k == 2) t2<<<(R / 64) * (C / 64) / 2, dim3(32, 16)>>>(a, b, R, C);
    cudaMemcpy(o.data(), b, n * 4, cudaMemcpyDeviceToHost);
    for (size_t r = 0; r < (size_t)R; r++) for (size_t c = 0; c < (size_t)C; c++) bad += o[c * R + r] != h[r * C + c];
    printf("check %d: %zu wrong\n", k, bad);
  }
  cudaError_t e = cudaGetLastError(); printf("%s\n", cudaGetErrorString(e));
}
