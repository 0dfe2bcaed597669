// Issue 10: is the column walk's cost channel balance? Tiles down columns, but the tile columns
// in flight together spread across the row: column j of the walk is (j % G) * (CT / G) + j / G.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
// 64 x 64 tile, (32, 16) threads, float2; TRANS 0 = copy in place, 1 = transpose (pitch 65)
template <int TRANS> __global__ void __launch_bounds__(512) tq(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int G) {
  __shared__ float t[64][65];
  int RT = rows / 64, CT = cols / 64, b = blockIdx.x, j = b / RT;
  int cj = G > 1 ? (j % G) * (CT / G) + j / G : j;
  int c0 = cj * 64, r0 = (b % RT) * 64, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[4];
#pragma unroll
  for (int k = 0; k < 4; k++) v[k] = __ldg((const float2*)&in[(size_t)(r0 + ty + k * 16) * cols + c0 + 2 * tx]);
  if (!TRANS) {
#pragma unroll
    for (int k = 0; k < 4; k++) *(float2*)&out[(size_t)(r0 + ty + k * 16) * cols + c0 + 2 * tx] = v[k];
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; k++) { t[ty + k * 16][2 * tx] = v[k].x; t[ty + k * 16][2 * tx + 1] = v[k].y; }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < 4; k++) { int c = ty + k * 16; v[k].x = t[2 * tx][c]; v[k].y = t[2 * tx + 1][c]; }
#pragma unroll
  for (int k = 0; k < 4; k++) { int c = ty + k * 16; *(float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx] = v[k]; }
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; std::vector<float> h; filled_pair(n, &a, &b, h);
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C; int tiles = (R / 64) * (C / 64);
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      for (int G : {1, 2, 4, 8, 16, 32, 128}) { if (G > C / 64) continue;
        float tc = median_ms([&] { tq<0><<<tiles, dim3(32, 16)>>>(a, b, R, C, G); });
        float tt = median_ms([&] { tq<1><<<tiles, dim3(32, 16)>>>(a, b, R, C, G); });
        printf("trq %5dx%-5d G=%-3d copy down %6.2f%%  transpose %6.2f%%\n", R, C, G, 100 * mem / tc, 100 * mem / tt); fflush(stdout);
      }
    }
  }
  int R = 4096, C = 16384; size_t m = (size_t)R * C;
  for (int G : {1, 8, 32}) {
    cudaMemset(b, 0xff, m * 4); tq<1><<<(R / 64) * (C / 64), dim3(32, 16)>>>(a, b, R, C, G);
    size_t bad = wrong_transpose(b, h, R, C);
    printf("check G=%d: %zu wrong\n", G, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
