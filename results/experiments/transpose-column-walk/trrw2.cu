// Issue 10, after trrw.cu: reads alone pay for the column walk (writes alone do not). Does the
// read side's cost depend on the tile's shape (how much of a row a tile reads), or on how many
// rows the walk spans (the same 256 MB as 8192 x 8192, 2048 x 32768 and 32768 x 2048)?
// Reads only: a sum per thread, kept only if it hits a value it never does.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define MEDIAN_REPS 21
#include "../common/timing.cuh"
// H x W tile of float2, 512 threads; ORDER 0 = tiles down columns, 1 = along rows.
template <int H, int W, int ORDER> __global__ void __launch_bounds__(512) rd(const float* __restrict__ in, float* __restrict__ sink, int rows, int cols) {
  constexpr int N2 = H * W / 2 / 512;
  int RT = rows / H, CT = cols / W, b = blockIdx.x, tid = threadIdx.x;
  int c0 = ORDER == 0 ? (b / RT) * W : (b % CT) * W, r0 = ORDER == 0 ? (b % RT) * H : (b / CT) * H;
  float s = 0;
#pragma unroll
  for (int k = 0; k < N2; k++) { int q = tid + k * 512, r = q / (W / 2), c = 2 * (q % (W / 2)); float2 v = __ldg((const float2*)&in[(size_t)(r0 + r) * cols + c0 + c]); s += v.x * v.y; }
  if (s == -1.5f) sink[blockIdx.x] = s;
}
template <int H, int W, int O> float run(const float* a, float* sink, int R, int C) {
  return median_ms([&] { rd<H, W, O><<<(R / H) * (C / W), 512>>>(a, sink, R, C); });
}
int main() {
  const size_t m = (size_t)1 << 26;
  float *a, *b, *sink; cudaMalloc(&a, m * 4); cudaMalloc(&b, m * 4); cudaMalloc(&sink, (m / 1024) * 4);
  std::vector<float> h(m); for (size_t i = 0; i < m; i++) h[i] = (float)((i * 2654435761u) % 1000003) * 1e-6f + 0.5f;
  cudaMemcpy(a, h.data(), m * 4, cudaMemcpyHostToDevice);
  for (int round = 0; round < 2; round++) {
    float mem = median_ms([&] { cudaMemcpyAsync(b, a, m * 4, cudaMemcpyDeviceToDevice); });
    double gm = 2.0 * m * 4 / mem / 1e6;
    printf("trrw2 memcpy %.1f GB/s\n", gm);
    auto rep = [&](int R, int C, const char* tile, float down, float along) {
      double gd = m * 4 / down / 1e6, ga = m * 4 / along / 1e6;
      printf("trrw2 %5dx%-5d %-8s read down %7.1f GB/s (%6.2f%%)  along %7.1f GB/s (%6.2f%%)  down/along %6.2f%%\n", R, C, tile, gd, 100 * gd / gm, ga, 100 * ga / gm, 100 * gd / ga);
      fflush(stdout);
    };
    int R = 8192, C = 8192;
    rep(R, C, "64x64", run<64, 64, 0>(a, sink, R, C), run<64, 64, 1>(a, sink, R, C));
    rep(R, C, "32x128", run<32, 128, 0>(a, sink, R, C), run<32, 128, 1>(a, sink, R, C));
    rep(R, C, "16x256", run<16, 256, 0>(a, sink, R, C), run<16, 256, 1>(a, sink, R, C));
    rep(R, C, "8x512", run<8, 512, 0>(a, sink, R, C), run<8, 512, 1>(a, sink, R, C));
    rep(R, C, "4x1024", run<4, 1024, 0>(a, sink, R, C), run<4, 1024, 1>(a, sink, R, C));
    rep(R, C, "128x32", run<128, 32, 0>(a, sink, R, C), run<128, 32, 1>(a, sink, R, C));
    rep(R, C, "256x16", run<256, 16, 0>(a, sink, R, C), run<256, 16, 1>(a, sink, R, C));
    int shapes[2][2] = {{2048, 32768}, {32768, 2048}};
    for (auto& s : shapes) { R = s[0]; C = s[1]; rep(R, C, "64x64", run<64, 64, 0>(a, sink, R, C), run<64, 64, 1>(a, sink, R, C)); }
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
