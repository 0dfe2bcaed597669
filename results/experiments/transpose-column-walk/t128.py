# t128.py ROUNDS: the 64x64 float2 transpose (trtwin.cu: the wide kernel's CUDA C twin, tiles down columns)
# against a 128x128 float2 tile (3 blocks an SM, 192 KB in flight an SM instead of 64), both
# shapes, each checked element by element, ratios to the device memcpy measured beside them.
import sys, numpy as np, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "trtwin.cu")).read()
mod = cp.RawModule(code=src, options=("-std=c++17",))
ks = {"t64": (mod.get_function("t64"), 64, (32, 16)), "t128": (mod.get_function("t128"), 128, (32, 16)), "t128b": (mod.get_function("t128b"), 128, (32, 32))}
for f, t, _ in ks.values():
    f.max_dynamic_shared_size_bytes = t * (t + 1) * 4
bufs = {}
for rows, cols in ((8192, 8192), (4096, 16384)):
    bufs[(rows, cols)] = (cp.random.standard_normal((rows, cols), dtype=cp.float32), cp.empty((cols, rows), dtype=cp.float32))
for rnd in range(int(sys.argv[1])):
    for (rows, cols), (x, y) in bufs.items():
        nb = x.nbytes
        mc = lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nb, cp.cuda.runtime.memcpyDeviceToDevice, 0)
        tm = med(mc); line = f"round {rnd} {rows}x{cols} memcpy {2*nb/tm/1e9:.0f}"
        for name, (f, t, blk) in ks.items():
            run = lambda: f(((rows // t) * (cols // t),), blk, (x, y, np.int32(rows), np.int32(cols)), shared_mem=t * (t + 1) * 4)
            y.fill(np.nan); run(); cp.cuda.Device().synchronize()
            assert bool((y == x.T).all()), name
            tw = med(run); line += f" | {name} {100*tm/tw:.2f}%"
        tm2 = med(mc); line += f" | memcpy after {2*nb/tm2/1e9:.0f}"
        print(line, flush=True)
