# sktime.py PTX: per-block start/end (globaltimer) of matmul_warptile_async and _streamk
import sys, numpy as np, torch, cupy as cp, statistics
torch.backends.cuda.matmul.allow_tf32 = False
mod = cp.RawModule(path=sys.argv[1])
T = mod.get_global("TIMES")
times = cp.ndarray((65536 // 4, 4), dtype=cp.uint64, memptr=T)
sms = torch.cuda.get_device_properties(0).multi_processor_count
smem = 3 * (16 * (128 + 4) + 16 * 256) * 4
for size in (4096, 8192, 3072):
    m = n = k = size
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda"); c = torch.empty(m, n, device="cuda")
    args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(c.data_ptr()), np.uint32(m), np.uint32(n), np.uint32(k))
    tiles = (m // 128) * (n // 256)
    for name in ("matmul_warptile_async", "matmul_warptile_streamk"):
        kern = mod.get_function(name); kern.max_dynamic_shared_size_bytes = smem
        grid = (n // 256, m // 128) if name.endswith("async") else (sms, tiles // sms + 1)
        for rep in range(3):
            for _ in range(3): kern(grid, (256,), args, shared_mem=smem)
            times[:] = 0
            torch.cuda.synchronize()
            kern(grid, (256,), args, shared_mem=smem); torch.cuda.synchronize()
            nb = grid[0] * grid[1]
            t = times[:nb].get().astype(np.int64)
            t0 = t[:, 0].min(); s = (t[:, 0] - t0) / 1e3; e = (t[:, 1] - t0) / 1e3; d = e - s
            span = e.max()
            line = f"{size}^3 {name[14:]} rep {rep}: span {span:.1f} us ({2*m*n*k/span/1e6:.2f} TFLOP/s)"
            if name.endswith("async"):
                order = np.argsort(s)
                waves = [order[i:i + sms] for i in range(0, nb, sms)]
                for w, blk in enumerate(waves):
                    line += f" | wave {w}: start {s[blk].min():.0f}-{s[blk].max():.0f} end {e[blk].min():.0f}-{e[blk].max():.0f} dur med {np.median(d[blk]):.1f}"
            else:
                for y in range(grid[1]):
                    blk = np.arange(y * grid[0], (y + 1) * grid[0])
                    line += f" | row {y}: start {s[blk].min():.0f}-{s[blk].max():.0f} end {e[blk].min():.0f}-{e[blk].max():.0f} dur med {np.median(d[blk]):.1f} min {d[blk].min():.1f} max {d[blk].max():.1f}"
            print(line, flush=True)
        if name.endswith("streamk"):
            y = grid[1] - 1
            blk = np.arange(y * grid[0], (y + 1) * grid[0])
            print("  sk row durations (us), block order:", " ".join(f"{x:.0f}" for x in d[blk]))
            print("  sk row starts:", " ".join(f"{x:.0f}" for x in s[blk]))
