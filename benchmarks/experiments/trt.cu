// Issue 9 / 10: what holds the TMA transpose at 87%? A CUDA C replica of transpose_tma (persistent,
// 3 stages, 8 blocks an SM, 32 x 32 boxes with the 128-byte swizzle, tiles along rows) beside its
// knobs: tile order, stages, blocks an SM, and one tile a block (no persistence).
#include <cstdio>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "timing.cuh"
__device__ __forceinline__ unsigned su32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mb_init(unsigned bar) { asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory"); }
__device__ __forceinline__ void mb_expect(unsigned bar, unsigned n) { asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n) : "memory"); }
__device__ __forceinline__ void mb_wait(unsigned bar, unsigned par) {
  unsigned ok = 0;
  while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(par) : "memory");
}
__device__ __forceinline__ void tma_ld(unsigned dst, const CUtensorMap* m, int x, int y, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_st(const CUtensorMap* m, int x, int y, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(m), "r"(x), "r"(y), "r"(src) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ int sw(int r, int c) { return r * 32 + ((((c >> 2) ^ (r & 7))) << 2) + (c & 3); }
__device__ __forceinline__ void origin(long tile, int RT, int CT, int order, int& c0, int& r0) {
  if (order == 0) { c0 = (int)(tile / RT) * 32; r0 = (int)(tile % RT) * 32; } else { c0 = (int)(tile % CT) * 32; r0 = (int)(tile / CT) * 32; }
}
// the box's 32 x 32 elements through 128 threads, 8 each: lanes along c (reads conflict-free)
__device__ __forceinline__ void move(const float* ld, float* st, int t) {
  int c = t & 31, w = t >> 5;
#pragma unroll
  for (int i = 0; i < 8; i++) { int r = w * 8 + i; st[sw(c, r)] = ld[sw(r, c)]; }
}
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
// one 64 x 64 tile a block: two loads of 64 x 32 boxes, two stores of 64 x 32 boxes, 256 threads
template <int ORDER> __global__ void __launch_bounds__(256) tma64(const __grid_constant__ CUtensorMap im, const __grid_constant__ CUtensorMap om, int rows, int cols) {
  extern __shared__ unsigned char raw[];
  unsigned b0 = su32(raw), pad = ((b0 + 1023) & ~1023u) - b0, base = b0 + pad, bar = base + 4 * 8192;
  float* boxes = (float*)(raw + pad);
  int RT = rows / 64, CT = cols / 64, t = threadIdx.x, c0, r0;
  if (ORDER == 0) { c0 = (blockIdx.x / RT) * 64; r0 = (blockIdx.x % RT) * 64; } else { c0 = (blockIdx.x % CT) * 64; r0 = (blockIdx.x / CT) * 64; }
  if (t == 0) {
    mb_init(bar); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); mb_expect(bar, 16384);
    tma_ld(base, &im, c0, r0, bar); tma_ld(base + 8192, &im, c0 + 32, r0, bar);
  }
  __syncthreads();
  mb_wait(bar, 0);
  int lane = t & 31, w = t >> 5;
#pragma unroll
  for (int hh = 0; hh < 2; hh++)
#pragma unroll
    for (int i = 0; i < 8; i++) { int r = w * 8 + i; boxes[4096 + (r >> 5) * 2048 + sw(32 * hh + lane, r & 31)] = boxes[hh * 2048 + sw(r, lane)]; }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&om), "r"(r0), "r"(c0), "r"(base + 16384) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&om), "r"(r0 + 32), "r"(c0), "r"(base + 24576) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    wait_read<0>();
  }
}
static CUtensorMap map(float* p, int rows, int cols, unsigned bh = 32) {
  CUtensorMap m; cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * 4};
  cuuint32_t box[2] = {32, bh}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) printf("encode failed %d\n", r);
  return m;
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4);
  std::vector<float> h(n); for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000003);
  cudaMemcpy(a, h.data(), n * 4, cudaMemcpyHostToDevice);
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
  int R = 4096, C = 16384; size_t m = (size_t)R * C; std::vector<float> o(m);
  CUtensorMap im = map(a, R, C), om = map(b, C, R);
  CUtensorMap im64 = map(a, R, C, 64), om64 = map(b, C, R, 64);
  for (int k = 0; k < 4; k++) {
    cudaMemset(b, 0xff, m * 4);
    if (k == 0) tmap<3, 1><<<8 * sms, 128, smemp(3)>>>(im, om, R, C);
    if (k == 1) tmap<6, 0><<<4 * sms, 128, smemp(6)>>>(im, om, R, C);
    if (k == 2) tma1<0><<<(R / 32) * (C / 32), 128, 9224>>>(im, om, R, C);
    if (k == 3) tma64<0><<<(R / 64) * (C / 64), 256, 1024 + 32768 + 8>>>(im64, om64, R, C);
    cudaMemcpy(o.data(), b, m * 4, cudaMemcpyDeviceToHost); size_t bad = 0;
    for (size_t r = 0; r < (size_t)R; r++) for (size_t c = 0; c < (size_t)C; c++) bad += o[c * R + r] != h[r * C + c];
    printf("check %d: %zu wrong\n", k, bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
