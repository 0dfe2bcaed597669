# twolaunch.py MAIN.ptx V3.ptx: stream-K as whole waves through the async kernel + a row-only kernel
import sys, numpy as np, torch, cupy as cp
from timing import med
torch.backends.cuda.matmul.allow_tf32 = False
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
def load(path):
    mod = cp.RawModule(path=path)
    ka = mod.get_function("matmul_warptile_async"); ka.max_dynamic_shared_size_bytes = smem
    ks = mod.get_function("matmul_warptile_streamk"); ks.max_dynamic_shared_size_bytes = smem
    return ka, ks
(ma, ms), (va, vs) = load(sys.argv[1]), load(sys.argv[2])
sms = torch.cuda.get_device_properties(0).multi_processor_count
for rnd in range(2):
  for size in (3072, 4096, 8192):
    m = n = k = size; fl = 2 * m * n * k
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double(); scale = ref.abs().max().item()
    tiles = (m // 128) * (n // 256); waves = tiles // sms
    cub = fl / med(lambda: torch.matmul(a, b)) / 1e12
    line = f"round {rnd} {size}^3 cublas {cub:.2f}"
    c = torch.full((m, n), float("nan"), device="cuda")
    args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(c.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
    runs = {
        "main async": lambda: ma((n // 256, m // 128), (256,), args, shared_mem=smem),
        "main streamk": lambda: ms((sms, waves + 1), (256,), args, shared_mem=smem),
        "v3 async": lambda: va((n // 256, m // 128), (256,), args, shared_mem=smem),
        "v3 two launches": lambda: (va((sms, waves), (256,), args, shared_mem=smem), vs((sms, 1), (256,), args, shared_mem=smem)),
    }
    for label, run in runs.items():
        c.fill_(float("nan")); run(); torch.cuda.synchronize()
        err = (c.double() - ref).abs().max().item() / scale
        t = med(run); line += f" | {label} {fl/t/1e12:.2f} {fl/t/1e12/cub:.3f}x ({err:.0e})"
    print(line, flush=True)
