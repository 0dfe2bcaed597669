#!/usr/bin/env bash
# The bundle's driver, for a GPU host that has the NVIDIA driver but no Rust toolchain.
#   run.sh [all|checks|report|cublas|peers|bench|ptxas|ncu|sanitize|hopper|devices|base|racecheck|peer-matrix] [args for that step]
# (`ncu [FILTER...]` profiles every registered run, or those whose id contains any FILTER.)
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

# PyTorch, CuPy and cuBLAS (through torch, TF32 off) over the report's cost curve, timed on this
# GPU in this run (peers.py writes peers.json); then the report in $logs/report, when there is one,
# is re-rendered with them beside the library's entry points. Neither torch nor CuPy is a
# dependency of the library: a host without python3 + torch gets one line saying so, and CuPy is
# left out where it does not import. Args: peers.py's (--entries, --max-log2, --max-side).
peers() {
  if python3 -c "import torch" 2>/dev/null; then
    python3 "$here/peers.py" --out "$logs/peers.json" "$@" 2>&1 | tee "$logs/peers.log" || status=1
    if [ -f "$logs/report/report.json" ] && [ -f "$logs/peers.json" ]; then
      "$here/bin/report" --from "$logs/report/report.json" --peers "$logs/peers.json" --out "$logs/report" \
        > /dev/null 2>>"$logs/peers.log" && echo "report re-rendered with the peers: $logs/report/report.md" \
        || { echo "re-rendering the report with the peers failed (see peers.log)"; status=1; }
    fi
  else
    echo "python3 with torch not found: no peers" | tee "$logs/peers.log"
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

# Nsight Compute counters for one launch of every benchmark run of the registry (`gpu --list`,
# CPU-only runs left out), at the benchmark's size: the kernel to catch is the run's first kernel
# as the registry reports it, and `gpu --once RUN` prepares the run's buffers (filled by util_fill,
# another kernel) and launches it exactly once, so no launch-skip count and no list of runs is
# kept by hand. A run of two launches of equal standing (stream-K's whole waves and shared row)
# lists a regex of both kernels and 2: ncu catches both, and ncu_table sums their counters. Args: substrings of the run ids to profile, any of them (default: every run).
# About 2 s a run.
# Then `ncu_table` puts the counters beside the model: ncu-table.md (every row) and
# ncu-off.md (the rows more than 5 % off, 10 % for DRAM bytes).
NCU_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
# Shared-memory wavefronts as the SASS instructions account for them (what Nsight Compute's Source
# page shows), without the L1 data-bank arbitration the hardware counters above also count:
# collected where this ncu knows them (an unknown metric would fail every run).
NCU_SASS_METRICS="smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st"
# L2 traffic from L1 (reads, writes, atomics and reductions; the lookups that hit), for the
# model's L2 and DRAM columns: collected where this ncu knows them.
NCU_L2_METRICS="lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_write \
lts__t_sectors_srcunit_tex_op_read_lookup_hit lts__t_sectors_srcunit_tex_op_write_lookup_hit \
lts__t_sectors_srcunit_tex_op_atom lts__t_sectors_srcunit_tex_op_red lts__t_sectors_srcunit_tex"

ncu_counters() {
  command -v ncu >/dev/null || { echo "ncu not on PATH: no counters" | tee "$logs/ncu.csv"; return; }
  local metrics=$NCU_METRICS known m f keep
  known=$(ncu --query-metrics 2>/dev/null | awk '{print $1}')
  for m in $NCU_SASS_METRICS $NCU_L2_METRICS; do
    if grep -qx "$m" <<<"$known"; then metrics="$metrics,$m.sum"; else echo "ncu has no $m: left out"; fi
  done
  : > "$logs/ncu.csv"
  # The profiler's floor: an empty launch's counters (every run's include them), in a file of
  # its own.
  { echo "# probe/empty"; ncu --csv --clock-control none --kernel-name probe_empty --launch-count 1 \
      --metrics "$metrics" "$here/bin/gpu" --once probe/empty 2>>"$logs/ncu.err" </dev/null | grep '^"'; } \
    > "$logs/ncu-floor.csv"
  "$here/bin/gpu" --list > "$logs/runs.txt"
  local start=$SECONDS count=0 run kernel launches gpus part=${NCU_PART:-1/1} lo hi total
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  # NCU_PART=i/n profiles the i-th of n equal stretches of the run list (one call too short for
  # every run: the parts' CSVs concatenated are one table).
  total=$(wc -l < "$logs/runs.txt")
  lo=$(( (${part%/*} - 1) * total / ${part#*/} )); hi=$(( ${part%/*} * total / ${part#*/} ))
  sed -n "$((lo + 1)),${hi}p" "$logs/runs.txt" > "$logs/runs-part.txt"
  while read -r run kernel launches; do
    [ "$kernel" = "-" ] && continue
    # The peer lessons need a second GPU: nothing to profile without one.
    case "$run" in peer/*) [ "$gpus" -ge 2 ] || continue ;; esac
    keep=$(( $# == 0 ))
    for f in "$@"; do case "$run" in *"$f"*) keep=1 ;; esac; done
    [ "$keep" = 1 ] || continue
    count=$((count + 1))
    echo "# $run" >> "$logs/ncu.csv"
    ncu --csv --clock-control none --kernel-name "$kernel" --launch-count "${launches:-1}" \
      --metrics "$metrics" "$here/bin/gpu" --once "$run" 2>>"$logs/ncu.err" </dev/null \
      | grep '^"' > "$logs/ncu-run.csv" || { echo "ncu failed for $run" | tee -a "$logs/ncu.csv"; status=1; continue; }
    # DRAM bytes again, alone (one replay pass) and from the second of two profiled rounds: the
    # first profiled launch of a process, and any launch profiled over several passes, count
    # about 2.3 MB of writes that are not the kernel's (BENCHMARKS.md). Where python3 or the
    # second round is missing, the first pass's counts stay.
    ncu --csv --clock-control none --kernel-name "$kernel" --launch-count $((2 * ${launches:-1})) \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      "$here/bin/gpu" --once "$run" --rounds 2 2>>"$logs/ncu.err" </dev/null | grep '^"' > "$logs/ncu-dram.csv"
    python3 - "$logs/ncu-run.csv" "$logs/ncu-dram.csv" "${launches:-1}" >> "$logs/ncu.csv" 2>>"$logs/ncu.err" <<'PY' \
      || cat "$logs/ncu-run.csv" >> "$logs/ncu.csv"
import csv, sys
full, dram, launches = list(csv.reader(open(sys.argv[1]))), list(csv.reader(open(sys.argv[2]))), int(sys.argv[3])
col = {k: i for i, k in enumerate(dram[0])} if dram else {}
second = {(str(int(r[0]) - launches), r[col["Metric Name"]]): r[col["Metric Value"]]
          for r in dram[1:] if int(r[0]) >= launches}
out = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL, lineterminator="\n")
names = {k: i for i, k in enumerate(full[0])}
for r in full:
    key = (r[0], r[names["Metric Name"]])
    if r[0] != "ID" and key[1].startswith("dram__bytes") and key in second:
        r = r[:names["Metric Value"]] + [second[key]] + r[names["Metric Value"] + 1:]
    out.writerow(r)
PY
  done < "$logs/runs-part.txt"
  echo "ncu: $count runs (part $part), $(grep -c '^"' "$logs/ncu.csv") counter rows in ncu.csv in $((SECONDS - start)) s"
  if [ -x "$here/bin/ncu_table" ]; then
    "$here/bin/ncu_table" "$logs/ncu.csv" > "$logs/ncu-table.md" || status=1
    "$here/bin/ncu_table" "$logs/ncu.csv" --only-off > "$logs/ncu-off.md" || status=1
    tail -n 1 "$logs/ncu-table.md"
  fi
}

# compute-sanitizer memcheck over the GPU checks (the large library checks excluded: each moves
# 17 GB, which memcheck would take far too long over). Args: a check filter.
sanitize() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not on PATH" | tee "$logs/memcheck.log"; return; }
  COALESCE_SKIP_LARGE=1 compute-sanitizer --tool memcheck --print-limit 20 "$here/bin/gpu" "$@" \
    > "$logs/memcheck.log" 2>&1 || status=1
  tail -n 3 "$logs/memcheck.log"
}

# compute-sanitizer racecheck (shared-memory hazards) over each check whose id matches the
# extended regex $1 (default: every matmul stage), one process a check with a time limit
# (RACE_TIMEOUT, 300 s), the checks dealt round-robin to every GPU the driver reports, which run
# side by side. The matmul checks take their sanitizer-sized shapes (COALESCE_SANITIZER=1).
# race.txt: a line a check with its exit status and racecheck's summary.
racecheck() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not on PATH" | tee "$logs/race.txt"; return; }
  local n d pattern=${1:-^matmul/} start=$SECONDS
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$n" -ge 1 ] || n=1
  "$here/bin/gpu" --checks | grep -E "$pattern" > "$logs/race-ids.txt"
  mkdir -p "$logs/race"
  for ((d = 0; d < n; d++)); do
    awk -v d="$d" -v n="$n" '(NR - 1) % n == d' "$logs/race-ids.txt" | while read -r id; do
      local log="$logs/race/$(tr '/=' '__' <<<"$id").log" rc
      COALESCE_DEVICE=$d COALESCE_SANITIZER=1 COALESCE_SKIP_LARGE=1 timeout "${RACE_TIMEOUT:-300}" \
        compute-sanitizer --tool racecheck --print-limit 20 "$here/bin/gpu" "$id" > "$log" 2>&1
      rc=$?
      echo "$id device $d rc $rc: $(grep -E '^test ' "$log" | sed 's/ (.*//;s/^test //' | tr '\n' ' ')| $(grep -m1 'RACECHECK SUMMARY' "$log" | sed 's/^=* *//')"
    done > "$logs/race-device$d.txt" &
  done
  wait
  cat "$logs"/race-device*.txt | sort > "$logs/race.txt"
  cat "$logs/race.txt"
  echo "racecheck: $(wc -l < "$logs/race.txt") checks on $n GPU(s) in $((SECONDS - start)) s; $(grep -c ' rc 0: .*ok .*0 hazards displayed' "$logs/race.txt") clean"
  grep -q -v ' rc 0: .*ok .*0 hazards displayed' "$logs/race.txt" && status=1
}

# The Hopper module's variants (issue 9) and the siblings they are compared with, in one pass:
# their checks, the whole report (every ratio against the same run's memcpy), memcheck over their
# checks, and Nsight Compute sections for the runs the numbers are about. Each part has a time
# limit, so a kernel that hangs costs minutes, not the session.
HOPPER_CHECKS="coalescing/cp_async coalescing/bulk matmul/cp_async transpose/tma histogram"
HOPPER_NCU="coalescing/vec4/blocks_per_sm=0 coalescing/cp_async/blocks_per_sm=8 coalescing/bulk/blocks_per_sm=3
transpose/padded/shape=0 transpose/tma/shape=0 matmul/prefetch matmul/cp_async
histogram/global/input=1 histogram/cluster/input=1"
hopper() {
  info
  ptxas_report
  timeout 240 "$here/bin/gpu" $HOPPER_CHECKS 2>&1 | tee "$logs/checks.log" || status=1
  timeout 180 "$here/bin/report" --no-sweep --out "$logs/report" 2>&1 | tail -n 3 | tee "$logs/report.log" || status=1
  if command -v compute-sanitizer >/dev/null; then
    COALESCE_SKIP_LARGE=1 timeout 300 compute-sanitizer --tool memcheck --print-limit 20 "$here/bin/gpu" $HOPPER_CHECKS \
      > "$logs/memcheck.log" 2>&1 || status=1
    tail -n 4 "$logs/memcheck.log"
  fi
  if command -v ncu >/dev/null; then
    "$here/bin/gpu" --list > "$logs/runs.txt"
    for run in $HOPPER_NCU; do
      kernel=$(awk -v r="$run" '$1 == r { print $2 }' "$logs/runs.txt")
      echo "# $run" >> "$logs/ncu-hopper.txt"
      timeout 60 ncu --clock-control none --kernel-name "$kernel" --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
        "$here/bin/gpu" --once "$run" >> "$logs/ncu-hopper.txt" 2>&1 || echo "ncu failed for $run" >> "$logs/ncu-hopper.txt"
    done
  fi
}

# Every other device the driver reports (device 0 is the other steps'): the GPU checks and the
# report with COALESCE_DEVICE set to it, logs and report folders suffixed with the device.
# Args: a report filter (default: every run, no sweep).
devices() {
  local n d
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  echo "devices: $n"
  for ((d = 1; d < n; d++)); do
    COALESCE_DEVICE=$d "$here/bin/gpu" 2>&1 | tee "$logs/checks-device$d.log" | tail -n 2 || status=1
    COALESCE_DEVICE=$d "$here/bin/report" --no-sweep --out "$logs/report-device$d" "$@" > "$logs/report-device$d.log" 2>&1 \
      || { echo "report on device $d failed (see report-device$d.log)"; status=1; }
    tail -n 2 "$logs/report-device$d.log"
  done
}

# Every ordered pair of the devices the driver reports: the library's copy reading the other
# device beside cuMemcpyPeer for the pair (gpu --peer-matrix), into peer-matrix.md.
peer_matrix() {
  "$here/bin/gpu" --peer-matrix 2>&1 | tee "$logs/peer-matrix.md" || status=1
}

# The GPU as a pre-Hopper one would run the suite: the base module only (the Hopper variants
# SKIPPED with their reason), every check and the whole report; logs and report suffixed -base.
base() {
  export COALESCE_BASE_MODULE_ONLY=1
  "$here/bin/gpu" "$@" 2>&1 | tee "$logs/checks-base.log" | tail -n 2 || status=1
  "$here/bin/report" --out "$logs/report-base" "$@" > "$logs/report-base.log" 2>&1 || status=1
  tail -n 2 "$logs/report-base.log"
  unset COALESCE_BASE_MODULE_ONLY
}

case "$step" in
  all) info; ptxas_report; checks; report; cublas; peers; ncu_counters; bench ;;
  base) info; base "$@" ;;
  sanitize) sanitize "$@" ;;
  racecheck) racecheck "$@" ;;
  peer-matrix) info; peer_matrix ;;
  checks) info; checks "$@" ;;
  report) info; report "$@" ;;
  cublas) info; cublas "$@" ;;
  peers) info; peers "$@" ;;
  bench) info; bench "$@" ;;
  ptxas) ptxas_report ;;
  ncu) ncu_counters "$@" ;;
  hopper) hopper ;;
  devices) info; devices "$@" ;;
  *) echo "unknown step $step (all|checks|report|cublas|peers|bench|ptxas|ncu|sanitize|racecheck|peer-matrix|hopper|devices|base)"; exit 2 ;;
esac
exit $status
