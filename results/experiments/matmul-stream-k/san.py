# san.py PTX: stream-K's two launches and the async kernel through CuPy on small shapes (for
# compute-sanitizer), every element checked against float64.
import sys, numpy as np, cupy as cp
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
mod = cp.RawModule(path=sys.argv[1])
k = {}
for name in ("matmul_warptile_async", "matmul_warptile_streamk_waves", "matmul_warptile_streamk"):
    k[name] = mod.get_function(name); k[name].max_dynamic_shared_size_bytes = smem
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
rng = np.random.default_rng(1)
for (m, n, kk) in [(1152, 4096, 512), (1280, 2304, 1008), (1536, 2816, 64), (128, 256, 16), (256, 512, 144)]:
    a = rng.standard_normal((m, kk), dtype=np.float32); b = rng.standard_normal((kk, n), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    da, db = cp.asarray(a), cp.asarray(b); dc = cp.full((m, n), np.nan, dtype=np.float32)
    args = (da, db, dc, np.uint32(m), np.uint32(n), np.uint32(kk))
    tiles = (m // 128) * (n // 256); waves = tiles // sms
    if (m, n, kk) == (256, 512, 144):
        k["matmul_warptile_async"]((n // 256, m // 128), (256,), args, shared_mem=smem); what = "async"
    else:
        if waves:
            k["matmul_warptile_streamk_waves"]((sms, waves), (256,), args, shared_mem=smem)
        if tiles % sms:
            k["matmul_warptile_streamk"]((sms, 1), (256,), args, shared_mem=smem)
        what = f"stream-K ({waves} waves, {tiles % sms} shared)"
    err = np.abs(cp.asnumpy(dc) - ref).max() / np.abs(ref).max()
    print(f"{m}x{n}x{kk} {what}: max relative error {err:.1e}", flush=True)
    assert err < 1e-5
