// What the transpose sweeps (trd, trs, trs2, trq, trt, trt2, trpitch) share around their
// kernels: the input filled with a hash of the index (never zeros), and the element-by-element
// check.
#pragma once
#include <vector>
#include <cuda_runtime.h>
// Two n-float device buffers; a holds h, a hash of the index, which stays on the host.
static void filled_pair(size_t n, float** a, float** b, std::vector<float>& h) {
  cudaMalloc(a, n * 4); cudaMalloc(b, n * 4);
  h.resize(n); for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000003);
  cudaMemcpy(*a, h.data(), n * 4, cudaMemcpyHostToDevice);
}
// Elements of the device output b (C x R) that are not the transpose of h's first R x C.
static size_t wrong_transpose(const float* b, const std::vector<float>& h, int R, int C) {
  size_t m = (size_t)R * C; std::vector<float> o(m);
  cudaMemcpy(o.data(), b, m * 4, cudaMemcpyDeviceToHost); size_t bad = 0;
  for (size_t r = 0; r < (size_t)R; r++) for (size_t c = 0; c < (size_t)C; c++) bad += o[c * R + r] != h[r * C + c];
  return bad;
}
