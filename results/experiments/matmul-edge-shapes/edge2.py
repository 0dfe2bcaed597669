# edge2.py ROUNDS PTX KERNEL...: guarded warp-tiled variants at edge shapes, alternated, beside
# cuBLAS and stream-K at 4096^3, and the 4097^3 split into 4096 rows + a 1-row tail (tiled or
# cp.async tail); every element checked.
import sys, numpy as np, torch, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
torch.backends.cuda.matmul.allow_tf32 = False
smem_a = 3 * (16 * (128 + 4) + 16 * 256) * 4
smem_e = 2 * (16 * (128 + 4) + 16 * 128) * 4
mod = cp.RawModule(path=sys.argv[2])
ke = {name: mod.get_function(name) for name in sys.argv[3:]}
sms = torch.cuda.get_device_properties(0).multi_processor_count
kw = mod.get_function("matmul_warptile_streamk_waves"); kw.max_dynamic_shared_size_bytes = smem_a
ks = mod.get_function("matmul_warptile_streamk"); ks.max_dynamic_shared_size_bytes = smem_a
kt = mod.get_function("matmul_tiled"); kc = mod.get_function("matmul_cp_async")
kc.max_dynamic_shared_size_bytes = 4 * 2 * 32 * 32 * 4
shapes = [(4096, 4096, 4096), (4097, 4097, 4097), (4095, 4095, 4095), (4000, 4100, 4033)]
def u(x): return np.uint32(x)
for rnd in range(int(sys.argv[1])):
    for (m, n, k) in shapes:
        fl = 2 * m * n * k
        a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
        ref = a.double() @ b.double(); scale = ref.abs().max().item()
        cub = fl / med(lambda: torch.matmul(a, b)) / 1e12
        line = f"round {rnd} {m}x{n}x{k} cublas {cub:.2f}"
        c = torch.full((m, n), float("nan"), device="cuda")
        P = lambda t, off=0: np.uint64(t.data_ptr() + 4 * off)
        args = (P(a), P(b), P(c), u(m), u(n), u(k))
        runs = {}
        if (m, n, k) == (4096, 4096, 4096):
            tiles = (m // 128) * (n // 256); waves = tiles // sms
            runs["streamK"] = lambda: (kw((sms, waves), (256,), args, shared_mem=smem_a), ks((sms, 1), (256,), args, shared_mem=smem_a))
        for name, f in ke.items():
            runs[name] = (lambda f=f, args=args, m=m: f(((n + 127) // 128, (m + 127) // 128), (256,), args, shared_mem=smem_e))
        if m % 128 and m % 128 <= 32:
            m1 = m - m % 128; r = m % 128
            top = (P(a), P(b), P(c), u(m1), u(n), u(k)); tail = (P(a, m1 * k), P(b), P(c, m1 * n), u(r), u(n), u(k))
            f0 = ke["matmul_warptile_edge"]
            runs["split_tiled"] = lambda: (f0(((n + 127) // 128, m1 // 128), (256,), top, shared_mem=smem_e), kt(((n + 31) // 32, (r + 31) // 32), (32, 32), tail, shared_mem=8192))
            runs["split_cpasync"] = lambda: (f0(((n + 127) // 128, m1 // 128), (256,), top, shared_mem=smem_e), kc(((n + 31) // 32, (r + 31) // 32), (32, 32), tail, shared_mem=32768))
            runs["top_only"] = lambda: f0(((n + 127) // 128, m1 // 128), (256,), top, shared_mem=smem_e)
            runs["tail_tiled"] = lambda: kt(((n + 31) // 32, (r + 31) // 32), (32, 32), tail, shared_mem=8192)
            runs["tail_cpasync"] = lambda: kc(((n + 31) // 32, (r + 31) // 32), (32, 32), tail, shared_mem=32768)
        for what, run in runs.items():
            c.fill_(float("nan")); run(); torch.cuda.synchronize()
            if not (what.startswith("top") or what.startswith("tail")):
                err = (c.double() - ref).abs().max().item() / scale
                assert err < 1e-5, (what, m, n, k, err)
            t = med(run); line += f" | {what} {fl/t/1e12:.2f} {t*1e3:.3f}ms"
        print(line, flush=True)
