# skcode.py PTX: whole tiles through the stream-K row's code path vs the whole-tile path
import sys, numpy as np, torch, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
mod = cp.RawModule(path=sys.argv[1])
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
ka = mod.get_function("matmul_warptile_async"); ka.max_dynamic_shared_size_bytes = smem
ks = mod.get_function("matmul_warptile_streamk"); ks.max_dynamic_shared_size_bytes = smem
for (m, n, k) in ((1536, 2816, 4096), (1536, 2816, 8192)):
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double(); scale = ref.abs().max().item()
    fl = 2 * m * n * k; line = f"{m}x{n}x{k}:"
    for label, kern, grid in (("async (11,12)", ka, (n // 256, m // 128)), ("streamk waves=1 (whole path)", ks, (132, 2)), ("streamk waves=0 (sk path, 1 segment each)", ks, (132, 1))):
        c = torch.full((m, n), float("nan"), device="cuda")
        args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(c.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
        run = lambda: kern(grid, (256,), args, shared_mem=smem)
        run(); torch.cuda.synchronize(); err = (c.double() - ref).abs().max().item() / scale
        t = med(run); line += f" | {label} {t*1e6:.1f} us {fl/t/1e12:.2f} TF ({err:.0e})"
    print(line, flush=True)
