// Issue 10: block size, occupancy and tile order of the 64 x 64 transpose: trtile.cuh's tile with
// 128 to 1024 threads, 2 to 13 blocks a multiprocessor (forced by shared memory), both orders.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "trtile.cuh"
#include "../common/trcheck.cuh"
template <int ORDER, int TRANS, int T> float runo(const float* a, float* b, int R, int C, int smem) {
  cudaFuncSetAttribute(tt<64, 64, ORDER, TRANS, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  return median_ms([&] { tt<64, 64, ORDER, TRANS, T><<<(R / 64) * (C / 64), T, smem>>>(a, b, R, C); });
}
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; std::vector<float> h; filled_pair(n, &a, &b, h);
  const int tile = 64 * 65 * 4;
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C;
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, int per, float ms) { printf("trs2 %5dx%-5d %-16s %2d/SM %7.1f us %6.2f%%\n", R, C, name, per, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      // blocks an SM forced by shared memory: 227 KB / per
      for (int per : {2, 3, 4, 6, 8}) { int smem = std::max(tile, 227 * 1024 / per - 1024);
        if (per <= 2) { rep("T down 1024t", per, runo<0, 1, 1024>(a, b, R, C, smem)); rep("T along 1024t", per, runo<1, 1, 1024>(a, b, R, C, smem)); }
        if (per <= 4) { rep("T down 512t", per, runo<0, 1, 512>(a, b, R, C, smem)); rep("T along 512t", per, runo<1, 1, 512>(a, b, R, C, smem)); }
        rep("T down 256t", per, runo<0, 1, 256>(a, b, R, C, smem)); rep("T along 256t", per, runo<1, 1, 256>(a, b, R, C, smem));
        rep("copy down 256t", per, runo<0, 0, 256>(a, b, R, C, smem)); rep("copy along 256t", per, runo<1, 0, 256>(a, b, R, C, smem));
      }
      rep("T down 128t", 13, runo<0, 1, 128>(a, b, R, C, tile)); rep("T along 128t", 13, runo<1, 1, 128>(a, b, R, C, tile));
    }
  }
  int R = 4096, C = 16384;
  printf("check 64x64 256t %zu wrong\n", check<64, 64, 0>(a, b, R, C, h));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
