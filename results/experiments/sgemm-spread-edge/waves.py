#!/usr/bin/env python3
"""Scratch: time stream-K's whole-wave kernels (Hopper PTX, CuPy) over shapes that differ in one
dimension, to find which edge made the guarded ring slow. `waves.py PTX` times each shape (CUDA
events, median of 7); `waves.py PTX MxNxK:KERNEL` runs one launch pair for ncu."""
import sys, math
import cupy as cp

mod = cp.RawModule(path=sys.argv[1])
SHARED = 4 * 16 * (132 + 256) * 4  # the spread ring's 4 stages
CASES = [
    ("matmul_spread_edge_waves", 4096, 4096, 4096),
    ("matmul_spread_edge_waves", 4096, 4352, 4096),
    ("matmul_spread_streamk_waves", 4096, 4352, 4096),
    ("matmul_spread_edge_waves", 4097, 4097, 4097),
    ("matmul_spread_edge_waves", 4096, 4097, 4096),
    ("matmul_spread_edge_waves", 4097, 4096, 4096),
    ("matmul_spread_edge_waves", 4096, 4096, 4097),
    ("matmul_spread_edge_waves", 4095, 4095, 4095),
    ("matmul_spread_edge_waves", 4000, 4100, 4033),
]
only = sys.argv[2] if len(sys.argv) > 2 else None
for name, m, n, k in CASES:
    if only and only != f"{m}x{n}x{k}:{name}":
        continue
    f = mod.get_function(name)
    f.max_dynamic_shared_size_bytes = SHARED
    a = cp.random.rand(m * k, dtype=cp.float32)
    b = cp.random.rand(k * n, dtype=cp.float32)
    c = cp.zeros(m * n, dtype=cp.float32)
    waves = math.ceil(m / 128) * math.ceil(n / 256) // 132
    args = (a, b, c, cp.uint32(m), cp.uint32(n), cp.uint32(k))
    for _ in range(2):
        f((132, waves), (256,), args, shared_mem=SHARED)
    if only:
        cp.cuda.Device().synchronize()
        continue
    times = []
    for _ in range(7):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        f((132, waves), (256,), args, shared_mem=SHARED)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
    t = sorted(times)[3]
    flops = 2.0 * 128 * 256 * 132 * waves * math.ceil(k / 16) * 16
    print(f"{name:30s} {m}x{n}x{k} grid (132,{waves}) {t:8.1f} us  {t / waves:7.1f} us/wave  "
          f"{flops / t / 1e6:6.2f} TFLOP/s(tile)", flush=True)
