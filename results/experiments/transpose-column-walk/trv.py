# trv.py PTX TRIALS: transpose_wide vs the device memcpy, each trial on fresh buffers (a spacer
# shifts them), to see how much of the call-to-call spread comes from where buffers land.
import sys, numpy as np, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
import torch
mod = cp.RawModule(path=sys.argv[1]); kw = mod.get_function("transpose_wide")
spacers = []
for trial in range(int(sys.argv[2])):
    spacers.append(cp.empty(int(np.random.randint(1, 64)) << 20, dtype=cp.uint8))
    line = f"trial {trial}"
    for rows, cols in ((8192, 8192), (4096, 16384)):
        x = cp.random.standard_normal((rows, cols), dtype=cp.float32); y = cp.full((cols, rows), np.nan, dtype=cp.float32)
        nb = x.nbytes
        mc = lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nb, cp.cuda.runtime.memcpyDeviceToDevice, 0)
        tiles = ((rows + 63) // 64) * ((cols + 63) // 64)
        run = lambda: kw((tiles, 1), (32, 16), (x, y, np.uint32(rows), np.uint32(cols)), shared_mem=64 * 65 * 4)
        run(); cp.cuda.Device().synchronize()
        assert bool((y == x.T).all()), "transpose mismatch"
        tm = med(mc); tw = med(run); tm2 = med(mc)
        line += f" | {rows}x{cols} memcpy {2*nb/tm/1e9:.0f}/{2*nb/tm2/1e9:.0f} GB/s wide {2*nb/tw/1e9:.0f} {100*tm/tw:.1f}%/{100*tm2/tw:.1f}%"
        del x, y
    print(line, flush=True)
