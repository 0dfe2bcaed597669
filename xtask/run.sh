#!/usr/bin/env bash
# The bundle's driver, for a GPU host that has the NVIDIA driver but no Rust toolchain.
#   run.sh [all|checks|report|bench|ptxas|ncu] [args for that step]
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

report() { "$here/bin/report" "$@" 2>&1 | tee "$logs/report.md" || status=1; }

bench() {
  "$here/bin/kernels" --bench --noplot --warm-up-time 0.2 --measurement-time 0.5 "$@" 2>&1 \
    | tee "$logs/criterion.log" || status=1
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

# Nsight Compute counters for one launch of each teaching kernel, taken from the GPU checks:
# "check filter|kernel|launches to skip" (the skip picks the check's largest size).
NCU_CASES="
coalescing/offset/offset=0|coalescing_offset|4
coalescing/offset/offset=1|coalescing_offset|4
coalescing/offset_cg/offset=1|coalescing_offset_cg|4
coalescing/stride/stride=2|coalescing_stride|4
coalescing/stride/stride=32|coalescing_stride|4
coalescing/vec4/blocks_per_sm=0|coalescing_vec4|8
access_order/chunked/per_thread=8|access_order_chunked|3
access_order/interleaved/per_thread=8|access_order_interleaved|3
access_order/block_x|access_order_block_x|4
access_order/block_y|access_order_block_y|4
layouts/aos|layouts_aos|4
layouts/aos_staged|layouts_aos_staged|4
layouts/soa|layouts_soa|4
layouts/aligned16|layouts_aligned16|4
transpose/copy|transpose_copy|6
transpose/naive|transpose_naive|6
transpose/shared|transpose_shared|6
transpose/padded|transpose_padded|6
bank/rows|bank_rows|0
bank/cols|bank_cols|0
bank/cols_padded|bank_cols_padded|0
reduce/interleaved_conflicts|reduce_interleaved_conflicts|4
reduce/sequential|reduce_sequential|4
distance/aos_gather|distance_aos_gather|3
distance/soa_gather|distance_soa_gather|3
"
NCU_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum

ncu_counters() {
  command -v ncu >/dev/null || { echo "ncu not on PATH: no counters" | tee "$logs/ncu.csv"; return; }
  : > "$logs/ncu.csv"
  echo "$NCU_CASES" | while IFS='|' read -r filter kernel skip; do
    [ -n "$filter" ] || continue
    echo "# $filter" >> "$logs/ncu.csv"
    ncu --csv --clock-control none --kernel-name "$kernel" --launch-skip "$skip" --launch-count 1 \
      --metrics "$NCU_METRICS" "$here/bin/gpu" "$filter" 2>>"$logs/ncu.err" \
      | grep '^"' >> "$logs/ncu.csv" || echo "ncu failed for $filter" | tee -a "$logs/ncu.csv"
  done
  echo "ncu: $(grep -c '^"' "$logs/ncu.csv") counter rows in ncu.csv"
}

case "$step" in
  all) info; ptxas_report; checks; report; ncu_counters; bench ;;
  checks) info; checks "$@" ;;
  report) info; report "$@" ;;
  bench) info; bench "$@" ;;
  ptxas) ptxas_report ;;
  ncu) ncu_counters ;;
  *) echo "unknown step $step (all|checks|report|bench|ptxas|ncu)"; exit 2 ;;
esac
exit $status
