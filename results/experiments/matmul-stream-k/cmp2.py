# cmp2.py ROUNDS main=PTX label=PTX ...: async (own grid) and stream-K (main: one kernel; others:
# whole waves + row, and each launch alone at 4096^3), with cuBLAS; every element checked.
import sys, numpy as np, torch, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
torch.backends.cuda.matmul.allow_tf32 = False
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
mods = {}
for arg in sys.argv[2:]:
    label, path = arg.split("=")
    mod = cp.RawModule(path=path)
    ka = mod.get_function("matmul_warptile_async"); ka.max_dynamic_shared_size_bytes = smem
    ks = mod.get_function("matmul_warptile_streamk"); ks.max_dynamic_shared_size_bytes = smem
    # The library's whole waves have an entry of their own; the prototype's ran on the async kernel.
    try:
        kw = mod.get_function("matmul_warptile_streamk_waves"); kw.max_dynamic_shared_size_bytes = smem
    except cp.cuda.driver.CUDADriverError:
        kw = ka
    mods[label] = (ka, ks, kw)
sms = torch.cuda.get_device_properties(0).multi_processor_count
for rnd in range(int(sys.argv[1])):
  for size in (2048, 3072, 4096, 8192):
    m = n = k = size; fl = 2 * m * n * k
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double(); scale = ref.abs().max().item()
    tiles = (m // 128) * (n // 256); waves = tiles // sms
    cub = fl / med(lambda: torch.matmul(a, b)) / 1e12
    line = f"round {rnd} {size}^3 cublas {cub:.2f}"
    c = torch.full((m, n), float("nan"), device="cuda")
    args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(c.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
    for label, (ka, ks, kw) in mods.items():
        runs = {}
        if size in (2048, 8192):
            runs["async"] = lambda: ka((n // 256, m // 128), (256,), args, shared_mem=smem)
        if size != 2048:
            if label == "main":
                runs["sk"] = lambda: ks((sms, waves + 1), (256,), args, shared_mem=smem)
            else:
                runs["sk"] = lambda: (kw((sms, waves), (256,), args, shared_mem=smem), ks((sms, 1), (256,), args, shared_mem=smem))
        for what, run in runs.items():
            c.fill_(float("nan")); run(); torch.cuda.synchronize()
            err = (c.double() - ref).abs().max().item() / scale
            assert err < 1e-5, (label, what, err)
            t = med(run); line += f" | {label} {what} {fl/t/1e12:.2f} {fl/t/1e12/cub:.3f}x"
        if size == 4096 and label != "main":
            tw = med(lambda: kw((sms, waves), (256,), args, shared_mem=smem))
            tr = med(lambda: ks((sms, 1), (256,), args, shared_mem=smem))
            line += f" [{label} waves {tw*1e6:.0f} us, row {tr*1e6:.0f} us]"
    print(line, flush=True)
