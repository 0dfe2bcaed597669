#!/usr/bin/env python3
"""Scratch: time SGEMM kernels of one PTX module beside torch.matmul (TF32 off) on square sizes.

`movers.py PTX KERNEL,KERNEL,.. N,N,.. ROUNDS`: checks each kernel against a float64 product
(NaN-poisoned output), then times interleaved rounds (CUDA events around batches of about 5 ms,
one untimed launch first), median of ROUNDS. ROUNDS 0 runs each kernel and cuBLAS once (for ncu).
The PTX is `cargo xtask build-ptx --arch sm_90 --out k.ptx` at tag `exp/sgemm-hopper-movers`,
with `.reqnctapercluster 1, 2, 1` added to the `matmul_ws_mc_*` entries; the `matmul_tmat_*` entries take B as a tensor map (`b_map`)."""
import sys, math
import cupy as cp, torch
torch.backends.cuda.matmul.allow_tf32 = False
mod = cp.RawModule(path=sys.argv[1])
names = sys.argv[2].split(",")
sizes = [int(s) for s in sys.argv[3].split(",")]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
def shared(name):
    if name == "matmul_warptile_spread" or name.startswith("matmul_spread_streamk"): return 4 * 16 * 388 * 4
    if name.startswith("matmul_spread8_s"): return int(name[-1]) * 8 * 388 * 4
    if name.startswith("matmul_tmab") or name.startswith("matmul_tmat"): return int(name[-1]) * (16 * 388 * 4 + 8)
    if name.startswith("matmul_ws_"): return int(name[-1]) * (16 * 388 * 4 + 24)
    raise SystemExit(name)
import ctypes, numpy as np
_cuda = ctypes.CDLL("libcuda.so.1")
def b_map(ptr, k, n):
    """A tensor map over row-major B (k x n floats), boxes of 16 rows x 256 columns, no swizzle."""
    raw = ctypes.create_string_buffer(256)
    addr = (ctypes.addressof(raw) + 63) // 64 * 64
    m = (ctypes.c_uint64 * 16).from_address(addr)
    dims = (ctypes.c_uint64 * 2)(n, k)
    strides = (ctypes.c_uint64 * 1)(n * 4)
    box = (ctypes.c_uint32 * 2)(256, 16)
    es = (ctypes.c_uint32 * 2)(1, 1)
    r = _cuda.cuTensorMapEncodeTiled(ctypes.c_void_p(addr), 7, 2, ctypes.c_void_p(ptr), dims, strides, box, es, 0, 0, 2, 0)
    assert r == 0, r
    return np.frombuffer(ctypes.string_at(addr, 128), dtype=np.dtype((np.void, 128)))[0]
def threads(nm):
    return 256 + 32 * int(nm.split('_p')[-1][0]) if '_ws_' in nm else 256
for s in sizes:
    m = n = k = s
    a = torch.rand(m, k, device="cuda"); b = torch.rand(k, n, device="cuda")
    ref = (a.double() @ b.double()).float()
    ca = cp.asarray(a.reshape(-1)); cb = cp.asarray(b.reshape(-1))
    fns = {}
    for nm in names:
        f = mod.get_function(nm); f.max_dynamic_shared_size_bytes = shared(nm)
        c = cp.full(m * n, cp.nan, dtype=cp.float32)
        bb = b_map(cb.data.ptr, k, n) if "tmat" in nm else cb
        f((n // 256, m // 128), (threads(nm),), (ca, bb, c, cp.uint32(m), cp.uint32(n), cp.uint32(k)), shared_mem=shared(nm))
        cp.cuda.Device().synchronize()
        err = (torch.as_tensor(c, device="cuda").reshape(m, n) - ref).abs().max().item() / ref.abs().max().item()
        print(f"{nm} {s}: max rel err {err:.2e}", flush=True)
        fns[nm] = (f, c, bb)
    if rounds == 0:
        torch.matmul(a, b); torch.cuda.synchronize(); continue
    reps = max(3, int(5000 / (2 * s**3 / 50e6)))  # batches of ~5 ms
    times = {nm: [] for nm in names + ["cublas"]}
    out = torch.empty(m, n, device="cuda")
    for r in range(rounds):
        for nm in names + ["cublas"]:
            st, en = cp.cuda.Event(), cp.cuda.Event()
            if nm == "cublas":
                torch.matmul(a, b, out=out)
                st.record()
                for _ in range(reps): torch.matmul(a, b, out=out)
                en.record()
            else:
                f, c, bb = fns[nm]
                args = (ca, bb, c, cp.uint32(m), cp.uint32(n), cp.uint32(k))
                f((n // 256, m // 128), (threads(nm),), args, shared_mem=shared(nm))
                st.record()
                for _ in range(reps): f((n // 256, m // 128), (threads(nm),), args, shared_mem=shared(nm))
                en.record()
            en.synchronize()
            times[nm].append(cp.cuda.get_elapsed_time(st, en) * 1e3 / reps)
    cb_t = sorted(times["cublas"])[rounds // 2]
    for nm in names + ["cublas"]:
        t = sorted(times[nm])[rounds // 2]
        print(f"{s}^3 {nm:28s} {t:9.1f} us {2*s**3/t/1e6:6.2f} TFLOP/s  x cuBLAS {cb_t/t:.4f}  (min {min(times[nm]):.1f} max {max(times[nm]):.1f})", flush=True)
