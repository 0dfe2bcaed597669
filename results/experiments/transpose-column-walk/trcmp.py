# trcmp.py ROUNDS label=PTX ...: transpose_wide of each module against its CUDA C twin (64x64
# float2, read-only unguarded loads, tiles down columns), same buffers, alternated; each checked.
import sys, numpy as np, cupy as cp
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from timing import med
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "trtwin.cu")).read()
twin = cp.RawModule(code=src, options=("-std=c++17",)).get_function("t64")
twin.max_dynamic_shared_size_bytes = 64 * 65 * 4
ks = {"twin": twin}
for arg in sys.argv[2:]:
    label, path = arg.split("=")
    ks[label] = cp.RawModule(path=path).get_function("transpose_wide")
bufs = {}
for rows, cols in ((8192, 8192), (4096, 16384)):
    bufs[(rows, cols)] = (cp.random.standard_normal((rows, cols), dtype=cp.float32), cp.empty((cols, rows), dtype=cp.float32))
for rnd in range(int(sys.argv[1])):
    for (rows, cols), (x, y) in bufs.items():
        nb = x.nbytes
        mc = lambda: cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nb, cp.cuda.runtime.memcpyDeviceToDevice, 0)
        tm = med(mc); line = f"round {rnd} {rows}x{cols} memcpy {2*nb/tm/1e9:.0f}"
        for name, f in ks.items():
            args = (x, y, np.int32(rows), np.int32(cols)) if name == "twin" else (x, y, np.uint32(rows), np.uint32(cols))
            run = lambda: f(((rows // 64) * (cols // 64),), (32, 16), args, shared_mem=64 * 65 * 4)
            y.fill(np.nan); run(); cp.cuda.Device().synchronize()
            assert bool((y == x.T).all()), name
            tw = med(run); line += f" | {name} {100*tm/tw:.2f}%"
        print(line, flush=True)
