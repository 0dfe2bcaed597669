#!/usr/bin/env python3
"""Scratch: time matmul kernel variants from a PTX file against cuBLAS (torch, TF32 off).

python3 xmm.py PTX name:shared_bytes[:bm:bn] ... [--sizes 2048,4096,8192] [--rounds 15]
Rounds interleave every candidate (one batch each per round), median per candidate.
"""
import argparse, json, sys, statistics
import numpy as np
import cupy as cp
import torch

p = argparse.ArgumentParser()
p.add_argument("ptx")
p.add_argument("kernels", nargs="+")
p.add_argument("--sizes", default="2048,4096,8192")
p.add_argument("--rounds", type=int, default=15)
p.add_argument("--out", default="xmm.json")
p.add_argument("--no-check", action="store_true")
args = p.parse_args()

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
mods = {"": cp.RawModule(path=args.ptx)}
cands = []
for spec in args.kernels:
    spec, _, modpath = spec.partition("@")
    if modpath and modpath not in mods:
        mods[modpath] = cp.RawModule(path=modpath)
    parts = spec.split(":")
    name, shared = parts[0], int(parts[1])
    bm, bn = (int(parts[2]), int(parts[3])) if len(parts) > 3 else (128, 256)
    f = mods[modpath].get_function(name)
    if modpath:
        name = name + "@" + modpath.rsplit("/", 1)[-1].split(".")[0].split("_")[-1]
    f.max_dynamic_shared_size_bytes = shared
    cands.append((name, f, shared, bm, bn))
    print(f"{name}: regs {f.num_regs} local {f.local_size_bytes} shared {shared}", flush=True)

results = {}
for s in [int(x) for x in args.sizes.split(",")]:
    m = n = k = s
    g = torch.Generator(device="cuda").manual_seed(s)
    A = torch.rand((m, k), device="cuda", generator=g) - 0.5
    B = torch.rand((k, n), device="cuda", generator=g) - 0.5
    C = torch.empty((m, n), device="cuda")
    ref = None
    if not args.no_check:
        ref = (A.double() @ B.double())
    def launcher(f, shared, bm, bn):
        grid = (n // bn, m // bm, 1)
        a = (np.uint64(A.data_ptr()), np.uint64(B.data_ptr()), np.uint64(C.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
        return lambda: f(grid, (256, 1, 1), a, shared_mem=shared)
    runs = {}
    for name, f, shared, bm, bn in cands:
        run = launcher(f, shared, bm, bn)
        if ref is not None:
            C.fill_(float("nan"))
            run(); torch.cuda.synchronize()
            err = ((C.double() - ref).norm() / ref.norm()).item()
            ok = err < 1e-5 and not torch.isnan(C).any().item()
            print(f"{s} {name}: rel err {err:.2e} {'ok' if ok else 'FAIL'}", flush=True)
        runs[name] = run
    runs["cublas"] = lambda: torch.matmul(A, B, out=C)
    # batch so a batch is >= ~3 ms
    times = {}
    for name, run in runs.items():
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); run(); e1.record(); e1.synchronize()
        one = e0.elapsed_time(e1)
        times[name] = (max(1, int(3.0 / max(one, 1e-3))), [])
    for r in range(args.rounds):
        for name, run in runs.items():
            reps, samples = times[name]
            run()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(reps):
                run()
            e1.record(); e1.synchronize()
            samples.append(e0.elapsed_time(e1) / reps)
    flops = 2.0 * m * n * k
    cub = statistics.median(times["cublas"][1])
    res = {}
    for name, (reps, samples) in times.items():
        med = statistics.median(samples)
        res[name] = {"ms": med, "tflops": flops / med / 1e9, "vs_cublas": cub / med, "min": min(samples), "max": max(samples)}
        print(f"{s}^3 {name:>12}: {med:.4f} ms {flops/med/1e9:6.2f} TFLOP/s  {cub/med:.4f}x cuBLAS  (spread {min(samples):.4f}-{max(samples):.4f})", flush=True)
    results[s] = res
    del A, B, C, ref
    torch.cuda.empty_cache()
json.dump(results, open(args.out, "w"), indent=1)
