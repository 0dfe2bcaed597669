// The TMA transpose sweeps' shared pieces (trt.cu, trt2.cu): mbarrier and bulk-tensor wrappers,
// the 128-byte swizzle of a 32-float box row, tile origins, the 64 x 64 one-tile-a-block kernel
// with __grid_constant__ maps, and the map encoder (64- or 32-row boxes of 32 floats).
#pragma once
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
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
// the 64 x 64 tile's move from the two loaded boxes into the two boxes to store (lanes along the
// loaded rows: reads conflict-free, writes 4-way), then thread 0 stores both and commits
__device__ __forceinline__ void move_and_store(float* boxes, unsigned base, int t, const CUtensorMap* om, int r0, int c0) {
  int lane = t & 31, w = t >> 5;
#pragma unroll
  for (int hh = 0; hh < 2; hh++)
#pragma unroll
    for (int i = 0; i < 8; i++) { int r = w * 8 + i; boxes[4096 + (r >> 5) * 2048 + sw(32 * hh + lane, r & 31)] = boxes[hh * 2048 + sw(r, lane)]; }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(om), "r"(r0), "r"(c0), "r"(base + 16384) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(om), "r"(r0 + 32), "r"(c0), "r"(base + 24576) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
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
  move_and_store(boxes, base, t, &om, r0, c0);
  if (t == 0) wait_read<0>();
}
static CUtensorMap map(float* p, int rows, int cols, unsigned bh = 32) {
  CUtensorMap m; cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * 4};
  cuuint32_t box[2] = {32, bh}, es[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) printf("encode failed %d\n", r);
  return m;
}
