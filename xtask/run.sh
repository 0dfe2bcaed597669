#!/usr/bin/env bash
# The bundle's driver, for a GPU host that has the NVIDIA driver but no Rust toolchain.
#   run.sh [all|checks|report|cublas|bench|ptxas|ncu|sanitize] [args for that step]
# Logs go to $OUT when set (the device tool's folder), else to ./logs beside this script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${OUT:-$here/logs}
mkdir -p "$logs"
export COALESCE_REQUIRE_GPU=1
step=${1:-all}
[ $# -gt 0 ] && shift
status=0

info() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(cat "$here/COMMIT")"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  } | tee "$logs/info.txt"
}

checks() {
  # Unit tests of the host library (no GPU needed) and the GPU correctness checks.
  "$here/bin/coalesce" --quiet 2>&1 | tee "$logs/unit.log" || status=1
  "$here/bin/gpu" "$@" 2>&1 | tee "$logs/checks.log" || status=1
}

report() { "$here/bin/report" --out "$logs/report" "$@" 2>&1 | tee "$logs/report.log" || status=1; }

# cuBLAS FP32 SGEMM through PyTorch (TF32 off), timed on this GPU in this run: the figure every
# SGEMM number in BENCHMARKS.md is divided by. cuBLAS is no dependency of the library; a host
# without python3 + torch gets one line saying so. Args: cublas.py's (--shapes ...).
cublas() {
  if python3 -c "import torch" 2>/dev/null; then
    python3 "$here/cublas.py" --out "$logs/cublas.json" "$@" 2>&1 | tee "$logs/cublas.log" || status=1
  else
    echo "python3 with torch not found: no cuBLAS reference" | tee "$logs/cublas.log"
  fi
}

bench() {
  # criterion's defaults as `cargo bench` has them; its HTML report goes to $CRITERION_HOME.
  export CRITERION_HOME="$logs/criterion"
  local start=$SECONDS
  "$here/bin/kernels" --bench "$@" > "$logs/criterion.log" 2>&1 || status=1
  echo "criterion: $(grep -c 'time:' "$logs/criterion.log") benchmarks in $((SECONDS - start)) s"
  tail -n 5 "$logs/criterion.log"
}

ptxas_report() {
  if command -v ptxas >/dev/null; then
    for f in "$here"/ptx/*.ptx; do
      arch=$(grep -m1 '^.target' "$f" | awk '{print $2}')
      ptxas -v --gpu-name sm_90 "$f" -o /dev/null > "$logs/ptxas-$arch.txt" 2>&1 || status=1
    done
  else
    echo "ptxas not on PATH: no resource report" | tee "$logs/ptxas.txt"
  fi
}

# Nsight Compute counters for one launch of a benchmark run each, at the benchmark's size: the
# kernel to catch is the run's first kernel as `gpu --list` reports it from the registry, and
# `gpu --once RUN` prepares the run's buffers (filled by util_fill, another kernel) and launches
# it exactly once, so no launch-skip count is kept by hand. NCU_RUNS picks the runs.
NCU_RUNS="
coalescing/offset/offset=0 coalescing/offset/offset=1 coalescing/offset_cg/offset=1
coalescing/stride/stride=2 coalescing/stride/stride=32 coalescing/vec4/blocks_per_sm=0
access_order/chunked/per_thread=8 access_order/interleaved/per_thread=8 access_order/block_x access_order/block_y
layouts/aos layouts/aos_staged layouts/soa layouts/aligned16
transpose/copy/shape=0 transpose/naive/shape=0 transpose/shared/shape=0 transpose/padded/shape=0
bank/rows bank/cols bank/cols_padded
reduce/interleaved_conflicts reduce/sequential
distance/aos_gather distance/soa_gather
"
NCU_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum

ncu_counters() {
  command -v ncu >/dev/null || { echo "ncu not on PATH: no counters" | tee "$logs/ncu.csv"; return; }
  : > "$logs/ncu.csv"
  "$here/bin/gpu" --list > "$logs/runs.txt"
  for run in $NCU_RUNS; do
    kernel=$(awk -v r="$run" '$1 == r { print $2 }' "$logs/runs.txt")
    [ -n "$kernel" ] || { echo "no run $run in the registry" | tee -a "$logs/ncu.csv"; status=1; continue; }
    echo "# $run" >> "$logs/ncu.csv"
    ncu --csv --clock-control none --kernel-name "$kernel" --launch-count 1 \
      --metrics "$NCU_METRICS" "$here/bin/gpu" --once "$run" 2>>"$logs/ncu.err" \
      | grep '^"' >> "$logs/ncu.csv" || echo "ncu failed for $run" | tee -a "$logs/ncu.csv"
  done
  echo "ncu: $(grep -c '^"' "$logs/ncu.csv") counter rows in ncu.csv"
}

# compute-sanitizer memcheck over the GPU checks (the large library checks excluded: each moves
# 17 GB, which memcheck would take far too long over). Args: a check filter.
sanitize() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not on PATH" | tee "$logs/memcheck.log"; return; }
  COALESCE_SKIP_LARGE=1 compute-sanitizer --tool memcheck --print-limit 20 "$here/bin/gpu" "$@" \
    > "$logs/memcheck.log" 2>&1 || status=1
  tail -n 3 "$logs/memcheck.log"
}

case "$step" in
  all) info; ptxas_report; checks; report; cublas; ncu_counters; bench ;;
  sanitize) sanitize "$@" ;;
  checks) info; checks "$@" ;;
  report) info; report "$@" ;;
  cublas) info; cublas "$@" ;;
  bench) info; bench "$@" ;;
  ptxas) ptxas_report ;;
  ncu) ncu_counters ;;
  *) echo "unknown step $step (all|checks|report|cublas|bench|ptxas|ncu|sanitize)"; exit 2 ;;
esac
exit $status
