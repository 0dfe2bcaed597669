#!/usr/bin/env python3
"""Scratch: stage 11's whole-wave kernel with B in floats (as main) or 16-byte vectors, against the
aligned spread kernel, on shapes whose n is a multiple of 4. Whole waves only (grid 132 x waves),
each kernel's output NaN-poisoned and checked over the tiles it covers against a float64 product.
`v4.py PTX ROUNDS`; the PTX is `cargo xtask build-ptx --arch sm_90` at tag `exp/spread-edge-v4`."""
import sys, math
import cupy as cp, torch
mod = cp.RawModule(path=sys.argv[1])
SHARED = 4 * 16 * (132 + 256) * 4
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 11
SHAPES = [(4096, 4096, 4096), (4000, 4100, 4033), (4095, 4096, 4096), (4096, 4096, 4095), (4096, 4100, 4096), (4097, 4096, 4097)]
for m, n, k in SHAPES:
    tn = math.ceil(n / 256); tiles = math.ceil(m / 128) * tn
    waves = tiles // 132
    a = torch.rand(m, k, device="cuda"); b = torch.rand(k, n, device="cuda")
    ref = (a.double() @ b.double()).float()
    mask = torch.zeros(m, n, dtype=torch.bool, device="cuda")
    for i in range(132 * waves):
        r, c = (i // tn) * 128, (i % tn) * 256
        mask[r:r + 128, c:c + 256] = True
    ca, cb = cp.asarray(a.reshape(-1)), cp.asarray(b.reshape(-1))
    names = ["matmul_spread_edge_waves", "matmul_spread_edge_waves_v4"]
    if m % 128 == 0 and n % 256 == 0 and k % 16 == 0:
        names = ["matmul_spread_streamk_waves"] + names
    fns = {}
    for nm in names:
        f = mod.get_function(nm); f.max_dynamic_shared_size_bytes = SHARED
        c = cp.full(m * n, cp.nan, dtype=cp.float32)
        args = (ca, cb, c, cp.uint32(m), cp.uint32(n), cp.uint32(k))
        f((132, waves), (256,), args, shared_mem=SHARED)
        cp.cuda.Device().synchronize()
        out = torch.as_tensor(c, device="cuda").reshape(m, n)
        err = ((out - ref).abs()[mask].max() / ref.abs().max()).item()
        print(f"{nm} {m}x{n}x{k}: max rel err over the {132 * waves} tiles {err:.2e}", flush=True)
        fns[nm] = (f, args)
    times = {nm: [] for nm in names}
    for _ in range(ROUNDS):
        for nm in names:
            f, args = fns[nm]
            f((132, waves), (256,), args, shared_mem=SHARED)
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            for _ in range(3):
                f((132, waves), (256,), args, shared_mem=SHARED)
            e.record(); e.synchronize()
            times[nm].append(cp.cuda.get_elapsed_time(s, e) * 1e3 / 3)
    kk = math.ceil(k / 16) * 16
    for nm in names:
        t = sorted(times[nm])[ROUNDS // 2]
        print(f"{m}x{n}x{k} {nm:30s} {t:8.1f} us  {2.0 * 128 * 256 * 132 * waves * kk / t / 1e6:6.2f} TFLOP/s a tile", flush=True)
