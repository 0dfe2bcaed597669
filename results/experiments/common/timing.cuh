// The CUDA C experiments' timing: 3 warm-up runs, then the median of MEDIAN_REPS samples, each
// a pair of events around 8 back-to-back runs, in ms per run. (A file may define MEDIAN_REPS
// before including this.)
#pragma once
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#ifndef MEDIAN_REPS
#define MEDIAN_REPS 21
#endif
template <class F> float median_ms(F f, int reps = MEDIAN_REPS) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) f();
  std::vector<float> t;
  for (int r = 0; r < reps; r++) { cudaEventRecord(a); for (int i = 0; i < 8; i++) f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms / 8); }
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
