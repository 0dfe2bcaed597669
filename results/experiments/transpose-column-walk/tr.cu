// Issue 10: transpose shapes past 97% of memcpy?
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "../common/timing.cuh"
// 64x64 tile, float2 both ways, optional streaming stores, optional several tiles per block along y
template <int ROWS, bool CS, int PAD> __global__ void t64(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[64][64 + PAD];
  int c0 = blockIdx.x * 64, r0 = blockIdx.y * 64, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[64 / ROWS];
#pragma unroll
  for (int j = 0; j < 64 / ROWS; j++) v[j] = *(const float2*)&in[(size_t)(r0 + ty + j * ROWS) * cols + c0 + 2 * tx];
#pragma unroll
  for (int j = 0; j < 64 / ROWS; j++) { t[ty + j * ROWS][2 * tx] = v[j].x; t[ty + j * ROWS][2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 64 / ROWS; j++) { float2 w; int c = ty + j * ROWS; w.x = t[2 * tx][c]; w.y = t[2 * tx + 1][c];
    float2* p = (float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx]; if (CS) __stcs(p, w); else *p = w; }
}
// 32x32 tile, loads all issued first, streaming stores option
template <bool CS> __global__ void t32(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y; float v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) v[j] = in[(size_t)(y + 8 * j) * cols + x];
#pragma unroll
  for (int j = 0; j < 4; j++) t[threadIdx.y + 8 * j][threadIdx.x] = v[j];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
#pragma unroll
  for (int j = 0; j < 4; j++) { float w = t[threadIdx.x][threadIdx.y + 8 * j]; float* p = &out[(size_t)(y + 8 * j) * rows + x]; if (CS) __stcs(p, w); else *p = w; }
}
// 64x64 float4: 16 lanes per row, a warp = 2 rows; block (32, ROWS) covers 2*ROWS rows per step
template <int ROWS> __global__ void t64v4(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[64][64 + 4];
  int c0 = blockIdx.x * 64, r0 = blockIdx.y * 64; int lane = threadIdx.x & 15, half = threadIdx.x >> 4, ty = threadIdx.y;
  constexpr int STEP = 2 * ROWS; float4 v[64 / STEP];
#pragma unroll
  for (int j = 0; j < 64 / STEP; j++) v[j] = *(const float4*)&in[(size_t)(r0 + 2 * ty + half + j * STEP) * cols + c0 + 4 * lane];
#pragma unroll
  for (int j = 0; j < 64 / STEP; j++) { int r = 2 * ty + half + j * STEP; t[r][4 * lane] = v[j].x; t[r][4 * lane + 1] = v[j].y; t[r][4 * lane + 2] = v[j].z; t[r][4 * lane + 3] = v[j].w; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 64 / STEP; j++) { int c = 2 * ty + half + j * STEP; float4 w; w.x = t[4 * lane][c]; w.y = t[4 * lane + 1][c]; w.z = t[4 * lane + 2][c]; w.w = t[4 * lane + 3][c];
    *(float4*)&out[(size_t)(c0 + c) * rows + r0 + 4 * lane] = w; }
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMemset(a, 1, n * 4);
  float mem = median_ms([&] { cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice); });
  printf("memcpy %.1f us\n", mem * 1e3);
  int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
  for (auto& s : shapes) { int R = s[0], C = s[1];
    auto rep = [&](const char* name, float ms) { printf("%-28s %5dx%-5d %.1f us %.2f%%\n", name, R, C, ms * 1e3, 100 * mem / ms); };
    rep("t32 loads-first", median_ms([&] { t32<false><<<dim3(C / 32, R / 32), dim3(32, 8)>>>(a, b, R, C); }));
    rep("t32 loads-first cs", median_ms([&] { t32<true><<<dim3(C / 32, R / 32), dim3(32, 8)>>>(a, b, R, C); }));
    rep("t64 f2 r16", median_ms([&] { t64<16, false, 1><<<dim3(C / 64, R / 64), dim3(32, 16)>>>(a, b, R, C); }));
    rep("t64 f2 r16 cs", median_ms([&] { t64<16, true, 1><<<dim3(C / 64, R / 64), dim3(32, 16)>>>(a, b, R, C); }));
    rep("t64 f2 r8 loads-first", median_ms([&] { t64<8, false, 1><<<dim3(C / 64, R / 64), dim3(32, 8)>>>(a, b, R, C); }));
    rep("t64 f2 r8 cs", median_ms([&] { t64<8, true, 1><<<dim3(C / 64, R / 64), dim3(32, 8)>>>(a, b, R, C); }));
    rep("t64 f2 r32", median_ms([&] { t64<32, false, 1><<<dim3(C / 64, R / 64), dim3(32, 32)>>>(a, b, R, C); }));
    rep("t64 f4 r8", median_ms([&] { t64v4<8><<<dim3(C / 64, R / 64), dim3(32, 8)>>>(a, b, R, C); }));
    rep("t64 f4 r16", median_ms([&] { t64v4<16><<<dim3(C / 64, R / 64), dim3(32, 16)>>>(a, b, R, C); }));
    rep("t64 f4 r4", median_ms([&] { t64v4<4><<<dim3(C / 64, R / 64), dim3(32, 4)>>>(a, b, R, C); }));
  }
  cudaError_t e = cudaGetLastError(); printf("%s\n", cudaGetErrorString(e));
}
