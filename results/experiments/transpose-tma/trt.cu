// Issue 9 / 10: what holds the TMA transpose at 87%? A CUDA C replica of transpose_tma (persistent,
// 3 stages, 8 blocks an SM, 32 x 32 boxes with the 128-byte swizzle, tiles along rows) beside its
// knobs: tile order, stages, blocks an SM, and one tile a block (no persistence).
#include <cstdio>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
#include "trtma.cuh"
template <int S, int ORDER> __global__ void __launch_bounds__(128) tmap(const __grid_constant__ CUtensorMap im, const __grid_constant__ CUtensorMap om, int rows, int cols) {
  extern __shared__ unsigned char raw[];
  unsigned b0 = su32(raw), pad = ((b0 + 1023) & ~1023u) - b0, base = b0 + pad;
  float* boxes = (float*)(raw + pad);
  int RT = rows / 32, CT = cols / 32, t = threadIdx.x; long all = (long)RT * CT;
  auto tile = [&](int j) { return (long)blockIdx.x + (long)j * gridDim.x; };
  auto bar = [&](int s) { return base + 2 * S * 4096 + 8 * s; };
  auto load = [&](int j) { if (tile(j) < all) { int s = j % S, c0, r0; origin(tile(j), RT, CT, ORDER, c0, r0); mb_expect(bar(s), 4096); tma_ld(base + s * 4096, &im, c0, r0, bar(s)); } };
  if (t == 0) { for (int s = 0; s < S; s++) mb_init(bar(s)); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); for (int j = 0; j < S; j++) load(j); }
  __syncthreads();
  for (int j = 0; tile(j) < all; j++) {
    int s = j % S;
    if (t == 0) wait_read<S - 1>();
    mb_wait(bar(s), (j / S) & 1);
    __syncthreads();
    move(boxes + s * 1024, boxes + (S + s) * 1024, t);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) { int c0, r0; origin(tile(j), RT, CT, ORDER, c0, r0); tma_st(&om, r0, c0, base + (S + s) * 4096); load(j + S); }
  }
  if (t == 0) wait_read<0>();
}
// one tile a block
template <int ORDER> __global__ void __launch_bounds__(128) tma1(const __grid_constant__ CUtensorMap im, const __grid_constant__ CUtensorMap om, int rows, int cols) {
  extern __shared__ unsigned char raw[];
  unsigned b0 = su32(raw), pad = ((b0 + 1023) & ~1023u) - b0, base = b0 + pad, bar = base + 8192;
  float* boxes = (float*)(raw + pad);
  int RT = rows / 32, CT = cols / 32, t = threadIdx.x, c0, r0;
  origin(blockIdx.x, RT, CT, ORDER, c0, r0);
  if (t == 0) { mb_init(bar); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); mb_expect(bar, 4096); tma_ld(base, &im, c0, r0, bar); }
  __syncthreads();
  mb_wait(bar, 0);
  move(boxes, boxes + 1024, t);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) { tma_st(&om, r0, c0, base + 4096); wait_read<0>(); }
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; std::vector<float> h; filled_pair(n, &a, &b, h);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  auto smemp = [](int S) { return 1024 + 2 * S * 4096 + 8 * S; };
  cudaFuncSetAttribute(tma64<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024 + 32768 + 8);
  cudaFuncSetAttribute(tma64<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024 + 32768 + 8);
  cudaFuncSetAttribute(tmap<6, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemp(6));
  cudaFuncSetAttribute(tmap<6, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemp(6));
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C; long tiles = (long)(R / 32) * (C / 32);
      CUtensorMap im = map(a, R, C), om = map(b, C, R);
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, float ms) { printf("trt %5dx%-5d %-30s %7.1f us %6.2f%%\n", R, C, name, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      char nm[64];
      for (int per : {8}) {
        snprintf(nm, 64, "persist S3 along %d/SM", per); rep(nm, median_ms([&] { tmap<3, 1><<<per * sms, 128, smemp(3)>>>(im, om, R, C); }));
        snprintf(nm, 64, "persist S3 down %d/SM", per); rep(nm, median_ms([&] { tmap<3, 0><<<per * sms, 128, smemp(3)>>>(im, om, R, C); }));
      }
      for (int per : {4}) {
        snprintf(nm, 64, "persist S6 along %d/SM", per); rep(nm, median_ms([&] { tmap<6, 1><<<per * sms, 128, smemp(6)>>>(im, om, R, C); }));
        snprintf(nm, 64, "persist S6 down %d/SM", per); rep(nm, median_ms([&] { tmap<6, 0><<<per * sms, 128, smemp(6)>>>(im, om, R, C); }));
      }
      rep("one tile a block, along", median_ms([&] { tma1<1><<<tiles, 128, 9224>>>(im, om, R, C); }));
      rep("one tile a block, down", median_ms([&] { tma1<0><<<tiles, 128, 9224>>>(im, om, R, C); }));
      CUtensorMap im64 = map(a, R, C, 64), om64 = map(b, C, R, 64);
      rep("64x64 a block, along", median_ms([&] { tma64<1><<<tiles / 4, 256, 1024 + 32768 + 8>>>(im64, om64, R, C); }));
      rep("64x64 a block, down", median_ms([&] { tma64<0><<<tiles / 4, 256, 1024 + 32768 + 8>>>(im64, om64, R, C); }));
    }
  }
  int R = 4096, C = 16384; size_t m = (size_t)R * C;
  CUtensorMap im = map(a, R, C), om = map(b, C, R);
  CUtensorMap im64 = map(a, R, C, 64), om64 = map(b, C, R, 64);
  for (int k = 0; k < 4; k++) {
    cudaMemset(b, 0xff, m * 4);
    if (k == 0) tmap<3, 1><<<8 * sms, 128, smemp(3)>>>(im, om, R, C);
    if (k == 1) tmap<6, 0><<<4 * sms, 128, smemp(6)>>>(im, om, R, C);
    if (k == 2) tma1<0><<<(R / 32) * (C / 32), 128, 9224>>>(im, om, R, C);
    if (k == 3) tma64<0><<<(R / 64) * (C / 64), 256, 1024 + 32768 + 8>>>(im64, om64, R, C);
    size_t bad = wrong_transpose(b, h, R, C);
    printf("check %d: %zu wrong\n", k, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
