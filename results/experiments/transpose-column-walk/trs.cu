// Issue 10: tile shape against DRAM locality: trtile.cuh's H x W tile, 256 threads, from 64 x 64
// to 4 x 1024, copied in place and transposed.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "trtile.cuh"
#include "../common/trcheck.cuh"
int main() {
  size_t n = (size_t)1 << 26; float *a, *b; std::vector<float> h; filled_pair(n, &a, &b, h);
  for (int round = 0; round < 2; round++) {
    int shapes[2][2] = {{8192, 8192}, {4096, 16384}};
    for (auto& s : shapes) { int R = s[0], C = s[1]; size_t m = (size_t)R * C;
      float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
      auto rep = [&](const char* name, float ms) { printf("trs %5dx%-5d %-28s %7.1f us %6.2f%%\n", R, C, name, ms * 1e3, 100 * mem / ms); fflush(stdout); };
      rep("memcpy", mem);
      rep("copy 64x64 down", run<64, 64, 0, 0>(a, b, R, C));
      rep("copy 32x128 down", run<32, 128, 0, 0>(a, b, R, C));
      rep("copy 16x256 down", run<16, 256, 0, 0>(a, b, R, C));
      rep("copy 8x512 down", run<8, 512, 0, 0>(a, b, R, C));
      rep("copy 4x1024 down", run<4, 1024, 0, 0>(a, b, R, C));
      rep("copy 64x64 along", run<64, 64, 1, 0>(a, b, R, C));
      rep("T 64x64 down (twin-like)", run<64, 64, 0, 1>(a, b, R, C));
      rep("T 64x64 down 512t", run<64, 64, 0, 1, 512>(a, b, R, C));
      rep("T 32x128 down", run<32, 128, 0, 1>(a, b, R, C));
      rep("T 16x256 down", run<16, 256, 0, 1>(a, b, R, C));
      rep("T 8x512 down", run<8, 512, 0, 1>(a, b, R, C));
      rep("T 32x256 down", run<32, 256, 0, 1>(a, b, R, C));
      rep("T 16x512 down", run<16, 512, 0, 1>(a, b, R, C));
      rep("T 64x128 down", run<64, 128, 0, 1>(a, b, R, C));
      rep("T 128x32 along", run<128, 32, 1, 1>(a, b, R, C));
      rep("T 256x16 along", run<256, 16, 1, 1>(a, b, R, C));
      rep("T 64x64 along", run<64, 64, 1, 1>(a, b, R, C));
      rep("T 64x64 down again", run<64, 64, 0, 1>(a, b, R, C));
    }
  }
  int R = 4096, C = 16384;
  printf("check 64x64 %zu 32x128 %zu 16x256 %zu 8x512 %zu 32x256 %zu 16x512 %zu 64x128 %zu 128x32a %zu 256x16a %zu wrong\n",
         check<64, 64, 0>(a, b, R, C, h), check<32, 128, 0>(a, b, R, C, h), check<16, 256, 0>(a, b, R, C, h), check<8, 512, 0>(a, b, R, C, h),
         check<32, 256, 0>(a, b, R, C, h), check<16, 512, 0>(a, b, R, C, h), check<64, 128, 0>(a, b, R, C, h), check<128, 32, 1>(a, b, R, C, h), check<256, 16, 1>(a, b, R, C, h));
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
