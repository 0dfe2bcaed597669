// Issue 9 / 10: the TMA transpose with its tensor maps in global memory, as the Rust kernel has them
// (rustc cannot pass a 64-byte aligned map by value): the cost of the per-block acquire fence
// (.sys, .gpu, none) against a __grid_constant__ map, and K tiles a block to share one fence.
#include <cstdio>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
#include "../common/trcheck.cuh"
#include "trtma.cuh"
// 64 x 64 tiles, maps in global memory acquired once a block (FENCE 0: none, 1: .sys, 2: .gpu),
// K tiles a block down a column, one after the other (load, move, store, wait for the read)
template <int K, int FENCE> __global__ void __launch_bounds__(256) tma64g(const CUtensorMap* maps, int rows, int cols) {
  extern __shared__ unsigned char raw[];
  unsigned b0 = su32(raw), pad = ((b0 + 1023) & ~1023u) - b0, base = b0 + pad, bar = base + 4 * 8192;
  float* boxes = (float*)(raw + pad);
  const CUtensorMap *im = maps, *om = maps + 1;
  int RT = rows / 64, t = threadIdx.x;
  if (t == 0) {
    if (FENCE == 1) { asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(im) : "memory"); asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(om) : "memory"); }
    if (FENCE == 2) { asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(im) : "memory"); asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(om) : "memory"); }
    mb_init(bar); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  for (int k = 0; k < K; k++) {
    long tile = (long)blockIdx.x * K + k; int c0 = (int)(tile / RT) * 64, r0 = (int)(tile % RT) * 64;
    if (t == 0) { if (k > 0) wait_read<0>(); mb_expect(bar, 16384); tma_ld(base, im, c0, r0, bar); tma_ld(base + 8192, im, c0 + 32, r0, bar); }
    mb_wait(bar, k & 1);
    move_and_store(boxes, base, t, om, r0, c0);
  }
  if (t == 0) wait_read<0>();
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; std::vector<float> h; filled_pair(n, &a, &b, h);
  CUtensorMap* gm; cudaMalloc(&gm, 2 * sizeof(CUtensorMap));
  const int SM = 1024 + 32768 + 8;
  cudaFuncSetAttribute(tma64<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, SM);
#define ATTR(K, F) cudaFuncSetAttribute(tma64g<K, F>, cudaFuncAttributeMaxDynamicSharedMemorySize, SM)
  ATTR(1, 0); ATTR(1, 1); ATTR(1, 2); ATTR(2, 1); ATTR(4, 1); ATTR(8, 1); ATTR(2, 0);
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C; long tiles = (long)(R / 64) * (C / 64);
      CUtensorMap hm[2] = {map(a, R, C, 64), map(b, C, R, 64)}; cudaMemcpy(gm, hm, sizeof(hm), cudaMemcpyHostToDevice);
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, float ms) { printf("trt2 %5dx%-5d %-34s %7.1f us %6.2f%%\n", R, C, name, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      rep("grid_constant, 1 tile", median_ms([&] { tma64<0><<<tiles, 256, SM>>>(hm[0], hm[1], R, C); }));
      rep("global, no fence, 1 tile", median_ms([&] { tma64g<1, 0><<<tiles, 256, SM>>>(gm, R, C); }));
      rep("global, .sys fence, 1 tile", median_ms([&] { tma64g<1, 1><<<tiles, 256, SM>>>(gm, R, C); }));
      rep("global, .gpu fence, 1 tile", median_ms([&] { tma64g<1, 2><<<tiles, 256, SM>>>(gm, R, C); }));
      rep("global, no fence, 2 tiles", median_ms([&] { tma64g<2, 0><<<tiles / 2, 256, SM>>>(gm, R, C); }));
      rep("global, .sys fence, 2 tiles", median_ms([&] { tma64g<2, 1><<<tiles / 2, 256, SM>>>(gm, R, C); }));
      rep("global, .sys fence, 4 tiles", median_ms([&] { tma64g<4, 1><<<tiles / 4, 256, SM>>>(gm, R, C); }));
      rep("global, .sys fence, 8 tiles", median_ms([&] { tma64g<8, 1><<<tiles / 8, 256, SM>>>(gm, R, C); }));
    }
  }
  int R = 4096, C = 16384; size_t m = (size_t)R * C;
  CUtensorMap hm[2] = {map(a, R, C, 64), map(b, C, R, 64)}; cudaMemcpy(gm, hm, sizeof(hm), cudaMemcpyHostToDevice);
  for (int k = 0; k < 3; k++) {
    cudaMemset(b, 0xff, m * 4); long tiles = (long)(R / 64) * (C / 64);
    if (k == 0) tma64g<1, 1><<<tiles, 256, SM>>>(gm, R, C);
    if (k == 1) tma64g<4, 1><<<tiles / 4, 256, SM>>>(gm, R, C);
    if (k == 2) tma64g<8, 1><<<tiles / 8, 256, SM>>>(gm, R, C);
    size_t bad = wrong_transpose(b, h, R, C);
    printf("check %d: %zu wrong\n", k, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
