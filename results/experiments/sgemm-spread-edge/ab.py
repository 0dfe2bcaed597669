#!/usr/bin/env python3
"""Scratch: one kernel of two PTX modules (old.ptx, new.ptx: `host/ptx/coalesce-sm_90.ptx` of two
commits) timed against each other on whole waves, outputs compared bit for bit. `python3 ab.py`."""
import sys, math
import cupy as cp
mods = {"old": cp.RawModule(path="old.ptx"), "new": cp.RawModule(path="new.ptx")}
S = 4 * 16 * 388 * 4
for m, n, k in [(4096, 4096, 4096), (4095, 4095, 4095), (4000, 4100, 4033), (4097, 4097, 4097)]:
    tiles = math.ceil(m / 128) * math.ceil(n / 256); waves = tiles // 132
    a = cp.random.rand(m * k, dtype=cp.float32); b = cp.random.rand(k * n, dtype=cp.float32)
    cs = {v: cp.full(m * n, cp.nan, dtype=cp.float32) for v in mods}
    fs = {}
    for v, mod in mods.items():
        f = mod.get_function("matmul_spread_edge_waves"); f.max_dynamic_shared_size_bytes = S; fs[v] = f
        f((132, waves), (256,), (a, b, cs[v], cp.uint32(m), cp.uint32(n), cp.uint32(k)), shared_mem=S)
    cp.cuda.Device().synchronize()
    same = bool(cp.array_equal(cs["old"], cs["new"], equal_nan=True))
    t = {v: [] for v in mods}
    for _ in range(11):
        for v in mods:
            args = (a, b, cs[v], cp.uint32(m), cp.uint32(n), cp.uint32(k))
            fs[v]((132, waves), (256,), args, shared_mem=S)
            s0, e0 = cp.cuda.Event(), cp.cuda.Event(); s0.record()
            for _ in range(3): fs[v]((132, waves), (256,), args, shared_mem=S)
            e0.record(); e0.synchronize(); t[v].append(cp.cuda.get_elapsed_time(s0, e0) * 1e3 / 3)
    kk = math.ceil(k / 16) * 16
    for v in mods:
        x = sorted(t[v])[5]
        print(f"{m}x{n}x{k} waves {v}: {x:8.1f} us {2.0*128*256*132*waves*kk/x/1e6:6.2f} TFLOP/s a tile; outputs identical: {same}", flush=True)
