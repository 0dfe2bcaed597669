# Where must the shuffle sum's 16-byte loads start for a view at offsets 1-3 to sum as fast as an aligned one?
# A CUDA C twin of reduce_shuffle_vec4 (CuPy RawKernel) peeling its head to a 32, 128, 512 or 4096-byte
# boundary, 2^28 i32 at element offsets 0-3, CUDA events around batches of 8, median of 41.
import cupy as cp, numpy as np
src = r'''
extern "C" __global__ void __launch_bounds__(1024) sum_head(const int* in, int* out, unsigned long long n, int align) {
  __shared__ int s[32];
  unsigned long long addr = (unsigned long long)in;
  unsigned long long head = (align - (addr / 4) % align) % align; if (head > n) head = n;
  const int4* src = (const int4*)(in + head);
  unsigned long long rest = n - head, vectors = rest / 4, tail = rest % 4;
  unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  int sum = 0; unsigned long long i = g;
  while (i + 3 * step < vectors) {
    int4 a = __ldg(src + i), b = __ldg(src + i + step), c = __ldg(src + i + 2 * step), d = __ldg(src + i + 3 * step);
    sum += (a.x + a.y) + (a.z + a.w); sum += (b.x + b.y) + (b.z + b.w); sum += (c.x + c.y) + (c.z + c.w); sum += (d.x + d.y) + (d.z + d.w);
    i += 4 * step;
  }
  while (i < vectors) { int4 a = __ldg(src + i); sum += (a.x + a.y) + (a.z + a.w); i += step; }
  if (g < head) sum += in[g];
  if (g < tail) sum += in[head + vectors * 4 + g];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffff, sum, o);
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  if (lane == 0) s[w] = sum;
  __syncthreads();
  if (w == 0) { int v = s[lane]; for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o); if (lane == 0) atomicAdd(out, v); }
}'''
k = cp.RawKernel(src, 'sum_head')
sms = cp.cuda.Device().attributes['MultiProcessorCount']
N = 1 << 28
buf = cp.random.randint(-1000, 1000, N + 4096, dtype=cp.int32)
out = cp.zeros(1, cp.int32)
def timed(f, reps=41, batch=8):
    for _ in range(3): f()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); [f() for _ in range(batch)]; b.record(); b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / batch)
    return float(np.median(ts))
for align in [8, 32, 128, 1024]:
    for off in range(4):
        v = buf[off:off + N]
        def f(): k((2 * sms,), (1024,), (v, out, cp.uint64(N), cp.int32(align)))
        out[...] = 0; f(); cp.cuda.runtime.deviceSynchronize()
        want = (int(v.sum(dtype=cp.int64).get()) + 2**31) % 2**32 - 2**31
        assert int(out.get()[0]) == want, (align, off, int(out.get()[0]), want)
        us = timed(f)
        print(f"peel to {align*4:5d} B, offset {off}: {us:8.1f} us  {4*N/us/1e3:7.0f} GB/s", flush=True)
