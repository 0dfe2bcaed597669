// Issue 10: the wide transpose's tile order (partition camping at power-of-two row pitches?)
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define MEDIAN_REPS 31
#include "../common/timing.cuh"
// block -> (tile column tx, tile row ty); RT row tiles, CT column tiles
__device__ __forceinline__ void order(int ord, int b, int RT, int CT, int& tx, int& ty) {
  switch (ord) {
    case 0: tx = b / RT; ty = b % RT; break;                          // down columns (shipped)
    case 1: tx = b % CT; ty = b / CT; break;                          // along rows
    case 2: { ty = b % RT; tx = (b / RT + ty) % CT; break; }          // diagonal, down columns
    case 3: { tx = b % CT; ty = (b / CT + tx) % RT; break; }          // diagonal, along rows
    case 4: { int g = 8, per = g * CT, grp = b / per, in = b % per;   // groups of 8 tile rows, down columns inside
              ty = grp * g + in % g; tx = in / g; break; }
    case 5: { int g = 16, per = g * CT, grp = b / per, in = b % per;
              ty = grp * g + in % g; tx = in / g; break; }
    case 6: { int g = 32, per = g * CT, grp = b / per, in = b % per;
              ty = grp * g + in % g; tx = in / g; break; }
    default: { ty = b % RT; tx = (b / RT + 7 * ty) % CT; break; }     // skewed by 7 tiles a row
  }
}
template <bool CS> __global__ void __launch_bounds__(512) t64(const float* __restrict__ in, float* __restrict__ out, int rows, int cols, int ord) {
  __shared__ float t[64][65];
  int RT = rows / 64, CT = cols / 64, bx, by; order(ord, blockIdx.x, RT, CT, bx, by);
  int c0 = bx * 64, r0 = by * 64, tx = threadIdx.x, ty = threadIdx.y;
  float2 v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) v[j] = *(const float2*)&in[(size_t)(r0 + ty + j * 16) * cols + c0 + 2 * tx];
#pragma unroll
  for (int j = 0; j < 4; j++) { t[ty + j * 16][2 * tx] = v[j].x; t[ty + j * 16][2 * tx + 1] = v[j].y; }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 4; j++) { int c = ty + j * 16; v[j].x = t[2 * tx][c]; v[j].y = t[2 * tx + 1][c]; }
#pragma unroll
  for (int j = 0; j < 4; j++) { int c = ty + j * 16; float2* p = (float2*)&out[(size_t)(c0 + c) * rows + r0 + 2 * tx]; if (CS) __stcs(p, v[j]); else *p = v[j]; }
}
__global__ void vcopy(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n4) out[i] = in[i];
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMemset(a, 1, n * 4);
  const char* names[] = {"down columns", "along rows", "diagonal/cols", "diagonal/rows", "groups of 8 rows", "groups of 16 rows", "groups of 32 rows", "skew 7"};
  for (int round = 0; round < 2; round++) {
    float mem = median_ms([&] { cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice); });
    float vc = median_ms([&] { vcopy<<<n / 4 / 256, 256>>>((const float4*)a, (float4*)b, n / 4); });
    printf("round %d memcpy %.1f us, vec4 copy %.2f%%\n", round, mem * 1e3, 100 * mem / vc);
    int shapes[3][2] = {{8192, 8192}, {4096, 16384}, {16384, 4096}};
    for (auto& s : shapes) { int R = s[0], C = s[1];
      for (int o = 0; o < 8; o++) {
        float ms = median_ms([&] { t64<false><<<(R / 64) * (C / 64), dim3(32, 16)>>>(a, b, R, C, o); });
        printf("tro %5dx%-5d %-18s %.1f us %.2f%%\n", R, C, names[o], ms * 1e3, 100 * mem / ms);
      }
    }
  }
  cudaError_t e = cudaGetLastError(); printf("%s\n", cudaGetErrorString(e));
}
