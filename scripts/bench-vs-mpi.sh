#!/usr/bin/env bash
# Weft's allreduce over its TCP transport next to Open MPI's MPI_Allreduce
# over Open MPI's TCP transport (--mca btl tcp,self), on loopback, in one
# run: for each rank count and size the two alternate, REPS times, and the
# table gives medians and their ratio. Weft's time includes its #wrong check
# run (untimed). This is the comparison docs/BENCHMARKS.md quotes.
# BASELINE=path/to/weft adds that binary's runs in the same rounds and the
# ratio new / baseline (before and after a change, side by side).
#
#   scripts/bench-vs-mpi.sh [NP...]        (default: 2 4)
#   REPS=5 MIN=1M MAX=256M BASELINE=/tmp/old/weft scripts/bench-vs-mpi.sh 2
set -euo pipefail
cd "$(dirname "$0")/.."
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 4)
reps=${REPS:-5}
min=${MIN:-1M}
max=${MAX:-256M}
baseline=${BASELINE:-}
bytes() { numfmt --from=iec "$1"; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

make -s build
mkdir -p bin
mpicc -O2 -o bin/mpi_allreduce scripts/peers/mpi_allreduce.c

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
sizes=(8)
for ((s = $(bytes "$min"); s <= $(bytes "$max"); s *= 2)); do sizes+=("$s"); done
for np in "${nps[@]}"; do
  for rep in $(seq "$reps"); do
    # Each size alone, Weft then MPI, so that both see the same machine.
    for s in "${sizes[@]}"; do
      mpirun -np "$np" -x WEFT_BACKEND=tcp -x WEFT_SHM=off bin/weft bench allreduce -b "$s" -e "$s" --csv |
        awk -F, -v np="$np" '$8=="out-of-place" {print "weft", np, $3, $9, $11, $12}' >>"$raw"
      if [ -n "$baseline" ]; then
        mpirun -np "$np" -x WEFT_BACKEND=tcp -x WEFT_SHM=off "$baseline" bench allreduce -b "$s" -e "$s" --csv |
          awk -F, -v np="$np" '$8=="out-of-place" {print "base", np, $3, $9, $11, $12}' >>"$raw"
      fi
      mpirun --mca btl tcp,self -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "mpi", np, $3, $4, $6, 0}' >>"$raw"
    done
  done
done

if [ -n "$baseline" ]; then
  echo "| ranks | size (B) | weft time (us) | weft busbw (GB/s) | Open MPI time (us) | Open MPI busbw (GB/s) | busbw ratio | #wrong | baseline busbw (GB/s) | new / baseline |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| ranks | size (B) | weft time (us) | weft busbw (GB/s) | Open MPI time (us) | Open MPI busbw (GB/s) | busbw ratio | #wrong |"
  echo "|---|---|---|---|---|---|---|---|"
fi
sort -k2,2n -k3,3n "$raw" | awk -v withbase="${baseline:+1}" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $2 " " $3; keys[k] = 1; t[$1, k] = t[$1, k] " " $4; b[$1, k] = b[$1, k] " " $5; w[k] += $6 }
  END {
    n = 0; for (k in keys) order[++n] = k
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) {
      split(order[i], x, " "); split(order[j], y, " ")
      if (y[1] + 0 < x[1] + 0 || (y[1] == x[1] && y[2] + 0 < x[2] + 0)) { tmp = order[i]; order[i] = order[j]; order[j] = tmp }
    }
    for (i = 1; i <= n; i++) {
      k = order[i]; split(k, x, " ")
      wt = median(t["weft", k]); wb = median(b["weft", k]); mt = median(t["mpi", k]); mb = median(b["mpi", k])
      if (x[2] == 8) ratio = sprintf("time %.2fx", wt / mt); else ratio = sprintf("%.2f", wb / mb)
      line = sprintf("| %d | %d | %.2f | %.3f | %.2f | %.3f | %s | %d |", x[1], x[2], wt, wb, mt, mb, ratio, w[k])
      if (withbase) {
        bt = median(t["base", k]); bb = median(b["base", k])
        line = line sprintf(" %.3f | %s |", bb, (x[2] == 8) ? sprintf("time %.2fx", wt / bt) : sprintf("%.2f", wb / bb))
      }
      print line
    }
  }'
