#!/usr/bin/env python3
"""PyTorch, CuPy and cuBLAS over the report's cost curve, timed on this GPU in the same run.

Not a dependency of the library: the bundle ships this script so the report's cost curve
(`report --peers peers.json`) shows, beside every entry point of the library, what the usual
Python libraries take for the same call at the same sizes:

    copy           dst.copy_(src) (torch), cupy.copyto(dst, src) (CuPy)       float32, n elements
    sum            torch.sum(x) (widens to int64), torch.sum(x, dtype=int32), cupy.sum(x),
                   cupy.sum through CUB's device reduce; read back: .item(), int()  int32, n elements
    transpose      x.t().contiguous(), cupy.ascontiguousarray(x.T), cuBLAS geam    float32, square
    transpose_1x4  the same, rows:cols = 1:4
    matmul         cuBLAS SGEMM through torch.matmul, TF32 off                 float32, n x n x n
    matmul_shapes  the same at MATMUL_SHAPES (small squares, skinny, thin k)   float32, m x n x k

at the sizes the Rust sweep uses (benches/src/sweep.rs): n = 2^10, 2^12, ..., 2^30 elements
(the square transpose's side sqrt(n), the 1:4 transpose's rows sqrt(n/4)), matmul sides 64 to
8192, and the matmul shapes of benches/src/sweep.rs's MATMUL_SHAPES (the same list, held equal by a
test). Each call is timed the way the Rust harness times its own (Gpu::median_time): 3 warm-up
calls, then CUDA events around a batch of back-to-back calls (about 2 ms, at most 64; one untimed
call queued ahead of each batch), the median of 21 batches (9 for the largest sizes). So at small
sizes the time is what one call costs the host (Python, the dispatcher, the launch), as it is
for the Rust entry points. The matmuls are also timed as a CUDA graph of such a batch ("cublas
graph"): the kernels' time without PyTorch's dispatch. Sizes that do not fit in free device memory
are skipped, saying so.

    python3 peers.py [--out peers.json] [--entries copy,sum,...] [--max-log2 30] [--max-side 8192]

Every peer's result is compared once with the expected one before it is timed (a sum with the
exact total, a transpose with x.T element for element); a peer that cannot run here, or gets it
wrong, is left out with one line saying why, so the fastest peer of a size is a correct one.

Writes {"info": {device, torch, cupy, cuda, date}, "rows": [{entry, shape, n, peer, median_us}]}.
"""
import argparse
import datetime
import json
import math
import statistics
import sys

WARMUP = 3
REPS = 21
REPS_BIG = 9
BIG = 1 << 33  # bytes or flops above which a point takes REPS_BIG samples (as the Rust sweep)
HEADROOM = 512 << 20
ENTRIES = ["copy", "sum", "transpose", "transpose_1x4", "matmul", "matmul_shapes"]
# (m, n, k) of the matmul_shapes entry, point i: benches/src/sweep.rs's MATMUL_SHAPES.
MATMUL_SHAPES = [
    (256, 256, 256),
    (384, 384, 384),
    (512, 512, 512),
    (768, 768, 768),
    (1024, 1024, 1024),
    (1, 4096, 4096),
    (8, 4096, 4096),
    (32, 4096, 4096),
    (128, 4096, 4096),
    (4096, 1, 4096),
    (4096, 8, 4096),
    (4096, 32, 4096),
    (4096, 128, 4096),
    (4096, 4096, 64),
    (4096, 4096, 128),
]


def matmul_shape(entry, n):
    return (n, n, n) if entry == "matmul" else MATMUL_SHAPES[n]


def sizes(entry, max_log2, max_side):
    if entry == "matmul_shapes":
        return list(range(len(MATMUL_SHAPES)))
    if entry == "matmul":
        return [s for s in (64, 128, 256, 512, 1024, 2048, 4096, 8192) if s <= max_side]
    return [1 << k for k in range(10, max_log2 + 1, 2)]


def transpose_shape(entry, n):
    half_log2 = lambda x: max(x, 1).bit_length() - 1 >> 1  # noqa: E731 (log2 of sqrt, rounded down)
    rows = 1 << half_log2(n) if entry == "transpose" else 1 << half_log2(n // 4)
    return rows, n // rows


def shape(entry, n):
    if entry.startswith("transpose"):
        return "%dx%d" % transpose_shape(entry, n)
    if entry.startswith("matmul"):
        return "%dx%dx%d" % matmul_shape(entry, n)
    return str(n)


def work(entry, n):
    if entry.startswith("matmul"):
        m, nn, k = matmul_shape(entry, n)
        return 2 * m * nn * k
    return {"copy": 8 * n, "sum": 4 * n, "transpose": 8 * n, "transpose_1x4": 8 * n}[entry]


def footprint(entry, n):
    if entry.startswith("matmul"):
        m, nn, k = matmul_shape(entry, n)
        return 4 * (m * k + k * nn + m * nn)
    return {"sum": 4 * n + 4}.get(entry, 8 * n)


def median_us(torch, run, reps):
    for _ in range(WARMUP):
        run()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed(batch):
        graph = run.graph(torch, batch) if isinstance(run, Graphed) else None
        # One untimed call ahead of the start event keeps the GPU busy while the batch is queued.
        run()
        start.record()
        if graph is not None:
            graph.replay()
        else:
            for _ in range(batch):
                run()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3 / batch

    once = timed(1)
    batch = min(64, max(1, math.ceil(2000.0 / max(once, 1e-1))))
    return statistics.median(timed(batch) for _ in range(reps))


class Graphed:
    """A call to time as a CUDA graph of a batch of it: the kernels without the host's dispatch.
    `median_us` sees `batch`; calling it runs the call once, uncaptured (warm-up and checks)."""

    def __init__(self, run):
        self.run = run
        self.graphs = {}

    def __call__(self):
        return self.run()

    def graph(self, torch, batch):
        if batch not in self.graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(WARMUP):
                    self.run()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(batch):
                    self.run()
            self.graphs[batch] = g
        return self.graphs[batch]


def cub_accelerator():
    """CuPy's switch for its reductions' back end (`cub`: CUB's device reduce), or None where
    this CuPy has none."""
    try:
        from cupy._core import _accelerator

        return _accelerator
    except Exception:
        return None


def peers_of(entry, n, torch, cupy):
    """(peer, callable, check) triples for `entry` at size `n`, with their buffers allocated:
    `check()` runs the peer once and says whether its result is right."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    out = []
    if entry == "copy":
        src = torch.rand(n, device="cuda", generator=gen)
        dst = torch.empty_like(src)
        out.append(("torch", lambda: dst.copy_(src), lambda: bool(torch.equal(dst.copy_(src), src))))
        if cupy is not None:
            csrc, cdst = cupy.asarray(src), cupy.empty(n, dtype=cupy.float32)
            out.append(("cupy", lambda: cupy.copyto(cdst, csrc), lambda: (cupy.copyto(cdst, csrc), bool((cdst == csrc).all()))[1]))
    elif entry == "sum":
        x = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32, generator=gen)
        total = int(torch.sum(x, dtype=torch.int64).item())
        wrapped = (total + 2**31) % 2**32 - 2**31
        # torch.sum of int32 accumulates in int64 by default; with dtype=int32 it does what
        # reduce::sum_to does (32-bit, wrapping). Neither waits for the host.
        out.append(("torch", lambda: torch.sum(x), lambda: int(torch.sum(x).item()) == total))
        out.append(("torch int32", lambda: torch.sum(x, dtype=torch.int32), lambda: int(torch.sum(x, dtype=torch.int32).item()) == wrapped))
        # ...and with the result read back to the host, as reduce::sum returns it.
        out.append(("torch .item()", lambda: torch.sum(x).item(), lambda: torch.sum(x).item() == total))
        if cupy is not None:
            cx = cupy.asarray(x)
            out.append(("cupy", lambda: cupy.sum(cx), lambda: int(cupy.sum(cx)) == total))
            out.append(("cupy int()", lambda: int(cupy.sum(cx)), lambda: int(cupy.sum(cx)) == total))
            if cub_accelerator() is not None:
                # Timed with CuPy's reductions switched to CUB (time_point), int32 as the library.
                cub = lambda: cupy.sum(cx, dtype=cupy.int32)
                out.append(("cupy cub", cub, lambda: int(cub()) == wrapped))
    elif entry.startswith("transpose"):
        rows, cols = transpose_shape(entry, n)
        x = torch.rand((rows, cols), device="cuda", generator=gen)
        want = x.t().contiguous()
        out.append(("torch", lambda: x.t().contiguous(), lambda: bool(torch.equal(x.t().contiguous(), want))))
        if cupy is not None:
            cx, cwant = cupy.asarray(x), cupy.asarray(want)
            out.append(("cupy", lambda: cupy.ascontiguousarray(cx.T), lambda: bool((cupy.ascontiguousarray(cx.T) == cwant).all())))
            try:
                from cupy import cublas

                # C = 1 * A^T + 0 * B, the transpose a CUDA programmer would ask cuBLAS for.
                zero = cupy.zeros((cols, rows), dtype=cupy.float32)
                cout = cupy.empty((cols, rows), dtype=cupy.float32)
                geam = lambda: cublas.geam("T", "N", 1.0, cx, 0.0, zero, out=cout)
                out.append(("cublas geam", geam, lambda: (geam(), bool((cout == cwant).all()))[1]))
            except Exception as e:
                print(f"cublas geam not available here: {e}")
    elif entry.startswith("matmul"):
        m, nn, k = matmul_shape(entry, n)
        a = torch.rand((m, k), device="cuda", generator=gen) * 2 - 1
        b = torch.rand((k, nn), device="cuda", generator=gen) * 2 - 1
        c = torch.empty((m, nn), device="cuda")
        mm = lambda: torch.matmul(a, b, out=c)  # noqa: E731
        want = (a.double() @ b.double()).float()
        # TF32 is off (main): every element within a few float32 rounding steps of the float64 product.
        right = lambda: (mm(), bool(torch.allclose(c, want, rtol=1e-4, atol=1e-3)))[1]  # noqa: E731
        out.append(("cublas", mm, right))
        out.append(("cublas graph", Graphed(mm), right))
    return out


def time_point(torch, cupy, entry, n):
    """The rows of every peer of `entry` at size `n` (its buffers freed on return)."""
    reps = REPS_BIG if work(entry, n) > BIG else REPS
    rows = []
    for peer, run, check in peers_of(entry, n, torch, cupy):
        accelerator = cub_accelerator() if peer == "cupy cub" else None
        before = accelerator.get_reduction_accelerators() if accelerator else None
        if accelerator:
            accelerator.set_reduction_accelerators(["cub"])
        try:
            right = check()
            us = median_us(torch, run, reps) if right else None
        except Exception as e:
            print(f"{entry} {shape(entry, n)} {peer}: left out, it failed here: {e}", flush=True)
            continue
        finally:
            if accelerator:
                accelerator.set_reduction_accelerators(before)
        if us is None:
            print(f"{entry} {shape(entry, n)} {peer}: left out, its result is wrong", flush=True)
            continue
        rows.append({"entry": entry, "shape": shape(entry, n), "n": n, "peer": peer, "median_us": us})
        rate = work(entry, n) / us / (1e6 if entry.startswith("matmul") else 1e3)
        unit = "TFLOP/s" if entry.startswith("matmul") else "GB/s"
        print(f"{entry} {shape(entry, n)} {peer}: {us:.1f} us, {rate:.2f} {unit}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="peers.json")
    parser.add_argument("--entries", default=",".join(ENTRIES))
    parser.add_argument("--max-log2", type=int, default=30)
    parser.add_argument("--max-side", type=int, default=8192)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("peers.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    try:
        import cupy
    except Exception as e:  # not installed, or built for another CUDA: torch alone
        print(f"peers.py: CuPy not importable ({e}): torch only", file=sys.stderr)
        cupy = None
    # True FP32 SGEMM: no TF32 tensor cores.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    assert not torch.backends.cuda.matmul.allow_tf32
    info = {
        "device": torch.cuda.get_device_properties(0).name,
        "torch": torch.__version__,
        "cupy": cupy.__version__ if cupy is not None else None,
        "cuda": torch.version.cuda,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    print(f"peers on {info['device']}: torch {info['torch']} (CUDA {info['cuda']}), CuPy {info['cupy']}")
    rows = []
    for entry in args.entries.split(","):
        if entry not in ENTRIES:
            print(f"peers.py: unknown entry {entry!r} (want {','.join(ENTRIES)})", file=sys.stderr)
            return 2
        for n in sizes(entry, args.max_log2, args.max_side):
            torch.cuda.empty_cache()
            if cupy is not None:
                cupy.get_default_memory_pool().free_all_blocks()
            free, _ = torch.cuda.mem_get_info()
            # The peers' own outputs (a transposed copy, a result) need room too: twice the inputs.
            need = 2 * footprint(entry, n)
            if need + HEADROOM > free:
                print(f"skipped {entry} at {shape(entry, n)}: {need / 2**30:.1f} GiB needed, {free / 2**30:.1f} GiB free")
                continue
            try:
                rows.extend(time_point(torch, cupy, entry, n))
            except (torch.cuda.OutOfMemoryError, MemoryError) as e:
                print(f"skipped {entry} at {shape(entry, n)}: {e}")
            torch.cuda.synchronize()
    with open(args.out, "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
