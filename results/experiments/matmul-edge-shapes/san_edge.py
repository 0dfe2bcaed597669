# san_edge.py PTX: the guarded warp-tiled kernels (the base one and its sm_90 build) through
# CuPy on small odd shapes (for compute-sanitizer), every element checked against float64.
import sys, numpy as np, cupy as cp
smem = 2 * (16 * (128 + 4) + 16 * 128) * 4
mod = cp.RawModule(path=sys.argv[1])
rng = np.random.default_rng(2)
for name in ("matmul_warptile_edge_sm90", "matmul_warptile_edge"):
    f = mod.get_function(name)
    for (m, n, k) in [(129, 129, 17), (257, 130, 33), (1, 1, 1), (200, 300, 45), (128, 256, 16)]:
        a = rng.standard_normal((m, k), dtype=np.float32); b = rng.standard_normal((k, n), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        da, db = cp.asarray(a), cp.asarray(b); dc = cp.full((m, n), np.nan, dtype=np.float32)
        f(((n + 127) // 128, (m + 127) // 128), (256,), (da, db, dc, np.uint32(m), np.uint32(n), np.uint32(k)), shared_mem=smem)
        err = np.abs(cp.asnumpy(dc) - ref).max() / np.abs(ref).max()
        print(f"{name} {m}x{n}x{k}: max relative error {err:.1e}", flush=True)
        assert err < 1e-5
