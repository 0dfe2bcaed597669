#!/usr/bin/env python3
"""cuBLAS FP32 SGEMM, timed on this GPU in the same run as coalesce's kernels.

Not a dependency of the library: the bundle ships this script so the report can state every
SGEMM figure as a ratio to cuBLAS measured on the same machine, minutes apart. It calls cuBLAS
through PyTorch (`torch.matmul` on float32 CUDA tensors) with TF32 off, so cuBLAS runs true FP32
(the kernel names it launched are printed: no "tf32" or "xmma_gemm_tf32" may appear), and times
it the way the Rust harness times its kernels: CUDA events around batches of back-to-back runs
(about 2 ms a batch, one untimed run queued ahead of each), 3 warm-up runs, the median of
21 batches.

    python3 cublas.py [--out FILE.json] [--shapes 1024,2048,4096x4096x4096,...]

A shape is `s` (s x s x s) or `MxNxK`. Prints one line per shape and writes JSON.
"""
import argparse
import json
import sys

from peers import WARMUP, median_us

DEFAULT_SHAPES = "1024,2048,4096,8192,4095,4097,4000x4100x4033"
REPS = 21


def parse_shape(text):
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) == 1:
        return (parts[0],) * 3
    if len(parts) == 3:
        return tuple(parts)
    raise ValueError(f"shape {text!r}: want S or MxNxK")


def median_seconds(torch, run):
    """Seconds a run, timed as peers.py times every peer (and the Rust harness its own runs)."""
    return median_us(torch, run, REPS) / 1e6


def kernel_names(torch, run):
    """The CUDA kernels one run launches (to show cuBLAS chose an FP32 kernel, not TF32)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="cublas.json")
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("cublas.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    # True FP32: no TF32 tensor cores in matmuls (PyTorch's default for matmul is already off,
    # but a site config may change it).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    assert torch.get_float32_matmul_precision() == "highest"
    assert not torch.backends.cuda.matmul.allow_tf32
    props = torch.cuda.get_device_properties(0)
    info = {
        "device": props.name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "warmup": WARMUP,
        "reps": REPS,
    }
    print(f"cuBLAS through torch {info['torch']} (CUDA {info['cuda']}) on {info['device']}, "
          f"precision {info['float32_matmul_precision']}, allow_tf32 {info['allow_tf32']}")
    runs = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    for text in args.shapes.split(","):
        m, n, k = parse_shape(text)
        a = torch.rand((m, k), device="cuda", generator=gen) * 2 - 1
        b = torch.rand((k, n), device="cuda", generator=gen) * 2 - 1
        c = torch.empty((m, n), device="cuda")

        def run():
            torch.matmul(a, b, out=c)

        seconds = median_seconds(torch, run)
        tflops = 2 * m * n * k / seconds / 1e12
        # A spot check that this is FP32 accuracy (TF32 would be ~1e-3 off).
        ref = (a[:64].double() @ b.double())
        err = ((c[:64].double() - ref).norm() / ref.norm()).item()
        names = kernel_names(torch, run)
        runs.append({"m": m, "n": n, "k": k, "median_us": seconds * 1e6, "tflops": tflops,
                     "rel_err_first_64_rows": err, "kernels": names})
        print(f"cublas {m}x{n}x{k}: {tflops:.2f} TFLOP/s ({seconds * 1e6:.1f} us), rel err {err:.1e}, "
              f"kernels {names}")
        del a, b, c
    with open(args.out, "w") as f:
        json.dump({"info": info, "runs": runs}, f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
