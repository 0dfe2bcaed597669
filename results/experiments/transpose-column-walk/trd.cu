// Issue 10: where does the 64x64 transpose lose its 3% against memcpy?
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
// LD: 0 plain, 1 L2::256B prefetch hint
template <int LD> __device__ __forceinline__ float2 ld2(const float* p) {
  float2 v;
  if (LD == 1) asm volatile("ld.global.nc.L2::256B.v2.f32 {%0,%1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p));
  else v = __ldg((const float2*)p);
  return v;
}
// the twin: one 64x64 tile a block, (32, ROWS) threads, tiles down columns
template <int ROWS, int LD> __global__ void __launch_bounds__(32 * ROWS) t64(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float t[64][65];
  constexpr int S = 64 / ROWS;
  int RT = rows / 64, b = blockIdx.x, c0 = (b / RT) * 64, r0 = (b % RT) * 64, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[S];
#pragma unroll
  for (int j = 0; j < S; j++) v[j] = ld2<LD>(&in[(size_t)(r0 + ty + j * ROWS) * cols + c0 + 2 * tx]);
#pragma unroll
  for (int j = 0; j < S; j++) { t[ty + j * ROWS][2 * tx] = v[j].x; t[ty + j * ROWS][2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < S; j++) { int c = ty + j * ROWS; v[j].x = t[2 * tx][c]; v[j].y = t[2 * tx + 1][c]; }
#pragma unroll
  for (int j = 0; j < S; j++) { int c = ty + j * ROWS; *(float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx] = v[j]; }
}
// persistent, tiles handed out by an atomic counter (a fresh counter each launch)
__global__ void __launch_bounds__(512) tdyn(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, unsigned* ctr) {
  __shared__ float t[64][65];
  __shared__ unsigned s_tile;
  int RT = rows / 64, tiles = RT * (cols / 64), tx = threadIdx.x, ty = threadIdx.y;
  for (;;) {
    if (tx == 0 && ty == 0) s_tile = atomicAdd(ctr, 1u);
    __syncthreads();
    int b = s_tile;
    if (b >= tiles) break;
    int c0 = (b / RT) * 64, r0 = (b % RT) * 64;
    float2 v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = __ldg((const float2*)&in[(size_t)(r0 + ty + j * 16) * cols + c0 + 2 * tx]);
#pragma unroll
    for (int j = 0; j < 4; j++) { t[ty + j * 16][2 * tx] = v[j].x; t[ty + j * 16][2 * tx + 1] = v[j].y; }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; j++) { int c = ty + j * 16; v[j].x = t[2 * tx][c]; v[j].y = t[2 * tx + 1][c]; }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; j++) { int c = ty + j * 16; *(float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx] = v[j]; }
  }
}
// tile copy, no transpose: a block of 256 threads moves an H x W tile to the same place, tiles
// down columns (ORDER 0) or along rows (1); W = 64 float2 lanes, 128 float4
template <int W, int ORDER> __global__ void __launch_bounds__(256) tc(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  constexpr int V = W / 32, H = 4096 / W, RS = 256 / 32;  // 4096 floats a tile, 16 a thread
  int RT = rows / H, CT = cols / W, b = blockIdx.x;
  int c0 = ORDER == 0 ? (b / RT) * W : (b % CT) * W, r0 = ORDER == 0 ? (b % RT) * H : (b / CT) * H;
  int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  if (V == 2) { float2 v[H / RS];
#pragma unroll
    for (int j = 0; j < H / RS; j++) v[j] = __ldg((const float2*)&in[(size_t)(r0 + ty + j * RS) * cols + c0 + 2 * tx]);
#pragma unroll
    for (int j = 0; j < H / RS; j++) *(float2*)&out[(size_t)(r0 + ty + j * RS) * cols + c0 + 2 * tx] = v[j];
  } else { float4 v[H / RS];
#pragma unroll
    for (int j = 0; j < H / RS; j++) v[j] = __ldg((const float4*)&in[(size_t)(r0 + ty + j * RS) * cols + c0 + 4 * tx]);
#pragma unroll
    for (int j = 0; j < H / RS; j++) *(float4*)&out[(size_t)(r0 + ty + j * RS) * cols + c0 + 4 * tx] = v[j];
  }
}
__global__ void copy4(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; if (i < n4) out[i] = in[i];
}
int main() {
  size_t n = (size_t)1 << 27; float *a, *b; unsigned* ctr; std::vector<float> h; filled_pair(n, &a, &b, h);
  const int NCTR = 1 << 14; cudaMalloc(&ctr, NCTR * 4); int ci = 0;
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1], tiles = (R / 64) * (C / 64); size_t m = (size_t)R * C;
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, float ms) { printf("trd %5dx%-5d %-26s %7.1f us %6.2f%%\n", R, C, name, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      rep("memcpy", mem);
      rep("copy4", median_ms([&] { copy4<<<m / 4 / 256, 256>>>((const float4*)a, (float4*)b, m / 4); }));
      rep("t64 twin", median_ms([&] { t64<16, 0><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t64 L2::256B", median_ms([&] { t64<16, 1><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
      rep("t64 256 threads", median_ms([&] { t64<8, 0><<<tiles, dim3(32, 8)>>>(a, b, R, C); }));
      rep("t64 128 threads", median_ms([&] { t64<4, 0><<<tiles, dim3(32, 4)>>>(a, b, R, C); }));
      for (int per : {3, 4}) { char nm[64]; snprintf(nm, 64, "dynamic %d/SM", per);
        cudaMemset(ctr, 0, NCTR * 4); ci = 0;
        rep(nm, median_ms([&] { tdyn<<<per * sms, dim3(32, 16)>>>(a, b, R, C, ctr + (ci++ % NCTR)); })); }
      rep("tilecopy 64x64 down", median_ms([&] { tc<64, 0><<<tiles, 256>>>(a, b, R, C); }));
      rep("tilecopy 64x64 along", median_ms([&] { tc<64, 1><<<tiles, 256>>>(a, b, R, C); }));
      rep("tilecopy 32x128 down", median_ms([&] { tc<128, 0><<<tiles, 256>>>(a, b, R, C); }));
      rep("tilecopy 32x128 along", median_ms([&] { tc<128, 1><<<tiles, 256>>>(a, b, R, C); }));
      rep("t64 twin again", median_ms([&] { t64<16, 0><<<tiles, dim3(32, 16)>>>(a, b, R, C); }));
    }
    // size sweep: rows 8192, cols 1024..16384, twin against memcpy of the same bytes
    for (int C : {1024, 2048, 4096, 8192, 16384}) { int R = 8192; size_t m = (size_t)R * C; int tiles = (R / 64) * (C / 64);
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      float tw = median_ms([&] { t64<16, 0><<<tiles, dim3(32, 16)>>>(a, b, R, C); });
      printf("sweep 8192x%-5d memcpy %7.1f us  twin %7.1f us  %6.2f%%\n", C, mem * 1e3, tw * 1e3, 100 * mem / tw); }
  }
  // checks: every element of every transposing variant at 4096x16384
  int R = 4096, C = 16384; size_t m = (size_t)R * C; int tiles = (R / 64) * (C / 64);
  for (int k = 0; k < 5; k++) {
    cudaMemset(b, 0xff, m * 4); cudaMemset(ctr, 0, 4);
    if (k == 0) t64<16, 0><<<tiles, dim3(32, 16)>>>(a, b, R, C);
    if (k == 1) t64<16, 1><<<tiles, dim3(32, 16)>>>(a, b, R, C);
    if (k == 2) t64<8, 0><<<tiles, dim3(32, 8)>>>(a, b, R, C);
    if (k == 3) t64<4, 0><<<tiles, dim3(32, 4)>>>(a, b, R, C);
    if (k == 4) tdyn<<<4 * sms, dim3(32, 16)>>>(a, b, R, C, ctr);
    size_t bad = wrong_transpose(b, h, R, C);
    printf("check %d: %zu wrong\n", k, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
