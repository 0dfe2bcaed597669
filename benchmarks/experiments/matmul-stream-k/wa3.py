# wa3.py ROUNDS SHAPES LABEL=PTX ... : cuBLAS and the async/stream-K kernels of each PTX,
# alternated in one process; each figure a median of 15 batches of ~50 ms.
import sys, time, numpy as np, torch, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
torch.backends.cuda.matmul.allow_tf32 = False
rounds = int(sys.argv[1]); shapes = [int(s) for s in sys.argv[2].split(",")]
sms = torch.cuda.get_device_properties(0).multi_processor_count
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
specs = []
for spec in sys.argv[3:]:
    label, path = spec.split("=")
    mod = cp.RawModule(path=path)
    for name in ("matmul_warptile_async", "matmul_warptile_streamk"):
        kern = mod.get_function(name); kern.max_dynamic_shared_size_bytes = smem
        specs.append((f"{label}:{name[15:]}", kern, name.endswith("streamk")))
data = {}
for size in shapes:
    m = n = k = size
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double(); scale = ref.abs().max().item(); del ref
    data[size] = (a, b, scale)
for r in range(rounds):
    for size in shapes:
        a, b, scale = data[size]; m = n = k = size; fl = 2 * m * n * k
        t = med(lambda: torch.matmul(a, b)); cub = fl / t / 1e12
        line = f"{time.time():.1f} round {r} {size}^3 cublas {cub:.2f}"
        tiles = (m // 128) * (n // 256)
        for label, kern, sk in specs:
            if sk and (tiles % sms == 0 or tiles < sms): continue
            c = torch.full((m, n), float("nan"), device="cuda")
            args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(c.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
            grid = (sms, tiles // sms + 1) if sk else (n // 256, m // 128)
            run = lambda: kern(grid, (256,), args, shared_mem=smem)
            run(); torch.cuda.synchronize()
            err = (c.double() - (a.double() @ b.double())).abs().max().item() / scale if r == 0 else 0
            t = med(run)
            line += f" | {label} {fl/t/1e12:.2f} {fl/t/1e12/cub:.3f}x" + (f" ({err:.0e})" if r == 0 else "")
        print(line, flush=True)
