"""The experiments' timing: CUDA events around batches of ~50 ms of back-to-back runs, one
untimed run queued ahead of each (so no launch latency falls between the events), 3 warm-up
runs, the median of `reps` batches, in seconds per run."""
import math
import statistics

import torch

_start, _stop = None, None


def med(run, reps=15):
    global _start, _stop
    if _start is None:
        _start, _stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        run()
    torch.cuda.synchronize()

    def timed(batch):
        run()
        _start.record()
        for _ in range(batch):
            run()
        _stop.record()
        _stop.synchronize()
        return _start.elapsed_time(_stop) / 1e3 / batch

    batch = max(1, min(64, math.ceil(0.05 / timed(1))))
    return statistics.median(timed(batch) for _ in range(reps))
