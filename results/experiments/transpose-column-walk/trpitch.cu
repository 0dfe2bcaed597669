// Issue 10: is the column walk's cost the power-of-two row pitch? The 64 x 64 copy (down columns
// and along rows) and the shipped transpose (down columns) over an 8192 x 8192 matrix whose rows
// sit `pitch` floats apart (8192 = dense, then padded), each against a memcpy of the same bytes.
// Both sides use the same pitch; the transposes are checked element by element.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
// ORDER 0 = tiles down columns, 1 = along rows; TRANS 0 = copy in place, 1 = transpose.
template <int ORDER, int TRANS> __global__ void __launch_bounds__(512) tp(const float* __restrict__ in, float* __restrict__ out, int n, size_t pitch) {
  __shared__ float t[64][65];
  int T = n / 64, b = blockIdx.x, tx = threadIdx.x, ty = threadIdx.y;
  int c0 = ORDER == 0 ? (b / T) * 64 : (b % T) * 64, r0 = ORDER == 0 ? (b % T) * 64 : (b / T) * 64;
  float2 v[4];
#pragma unroll
  for (int k = 0; k < 4; k++) v[k] = __ldg((const float2*)&in[(r0 + ty + 16 * k) * pitch + c0 + 2 * tx]);
  if constexpr (!TRANS) {
#pragma unroll
    for (int k = 0; k < 4; k++) *(float2*)&out[(r0 + ty + 16 * k) * pitch + c0 + 2 * tx] = v[k];
  } else {
#pragma unroll
    for (int k = 0; k < 4; k++) { t[ty + 16 * k][2 * tx] = v[k].x; t[ty + 16 * k][2 * tx + 1] = v[k].y; }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; k++) { v[k].x = t[2 * tx][ty + 16 * k]; v[k].y = t[2 * tx + 1][ty + 16 * k]; }
#pragma unroll
    for (int k = 0; k < 4; k++) *(float2*)&out[(c0 + ty + 16 * k) * pitch + r0 + 2 * tx] = v[k];
  }
}
template <int O, int X> float run(const float* a, float* b, int n, size_t p) {
  return median_ms([&] { tp<O, X><<<(n / 64) * (n / 64), dim3(32, 16)>>>(a, b, n, p); });
}
int main() {
  const int n = 8192; const size_t maxp = 16384, cap = n * maxp;
  float *a, *b; std::vector<float> h; filled_pair(cap, &a, &b, h);
  size_t pitches[] = {8192, 8192 + 8, 8192 + 32, 8192 + 64, 8192 + 256, 8192 + 1024, 8192 + 4096, 16384};
  for (int round = 0; round < 2; round++) {
    float mem = median_ms([&] { cudaMemcpyAsync(b, a, (size_t)n * n * 4, cudaMemcpyDeviceToDevice); });
    for (size_t p : pitches) {
      float cd = run<0, 0>(a, b, n, p), ca = run<1, 0>(a, b, n, p), td = run<0, 1>(a, b, n, p), ta = run<1, 1>(a, b, n, p);
      printf("trpitch pitch %5zu (+%4zu)  copy down %6.2f%%  copy along %6.2f%%  T down %6.2f%%  T along %6.2f%%\n", p, p - n,
             100 * mem / cd, 100 * mem / ca, 100 * mem / td, 100 * mem / ta);
      fflush(stdout);
    }
  }
  for (size_t p : {(size_t)8192, (size_t)8192 + 32}) {
    cudaMemset(b, 0xff, cap * 4); tp<0, 1><<<(n / 64) * (n / 64), dim3(32, 16)>>>(a, b, n, p);
    std::vector<float> o(cap); cudaMemcpy(o.data(), b, cap * 4, cudaMemcpyDeviceToHost); size_t bad = 0;
    for (size_t r = 0; r < (size_t)n; r++) for (size_t c = 0; c < (size_t)n; c++) bad += o[c * p + r] != h[r * p + c];
    printf("check pitch %zu: %zu wrong\n", p, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
