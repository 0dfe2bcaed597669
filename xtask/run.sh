#!/usr/bin/env bash
# The bundle's driver, for a GPU host that has the NVIDIA driver but no Rust toolchain.
#   run.sh [all|checks|report|bench|ptxas] [args for that step]
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
  "$here/bin/kernels" --bench --noplot --warm-up-time 0.5 --measurement-time 1 "$@" 2>&1 \
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

case "$step" in
  all) info; ptxas_report; checks; report; bench ;;
  checks) info; checks "$@" ;;
  report) info; report "$@" ;;
  bench) info; bench "$@" ;;
  ptxas) ptxas_report ;;
  *) echo "unknown step $step (all|checks|report|bench|ptxas)"; exit 2 ;;
esac
exit $status
