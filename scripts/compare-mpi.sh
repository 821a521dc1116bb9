#!/usr/bin/env bash
# Allreduce on one host, in one run: Weft's own transports (shared memory),
# Weft's MPI backend, and Open MPI's MPI_Allreduce called from C
# (scripts/peers/mpi_allreduce.c), with Open MPI's defaults and with each of
# the settings that were best at some size here, plus a memcpy of the same
# bytes as the memory bound.
#
# Open MPI's settings: glibc keeping freed memory (mallopt(3)'s M_MMAP_MAX
# and M_TRIM_THRESHOLD through GLIBC_TUNABLES), since its allreduce
# algorithms malloc their temporary buffers on every call
# (coll_base_allreduce.c) and fresh pages are slow to touch
# (docs/BENCHMARKS.md, "The machine"); with that, three variants: no
# single-copy mechanism (btl_vader_single_copy_mechanism none, `ompi_info
# --param btl vader --level 9`), the default single copy (CMA,
# process_vm_readv), and CMA with the Rabenseifner allreduce forced
# (coll_tuned_allreduce_algorithm 6). "Open MPI best" is, size by size, the
# best median of the three. A multi-threaded process (any Go program)
# mallocs from arenas of its own per thread, where the two tunables do not
# act: they add arena_max=1 (M_ARENA_MAX), which changes nothing for the
# single-threaded C peer. Weft's MPI backend runs with the first variant's
# mpirun options and without GLIBC_TUNABLES: it sets what it needs itself
# (mallopt, package collective/mpi), so this is what a user gets.
#
# For each rank count and size the runs alternate, REPS times; the table
# gives medians of busbw (GB/s; time in us at 8 bytes), Weft-shm / best
# Open MPI, and Weft's MPI backend / best Open MPI. BASELINE=path/to/weft
# adds that binary's shared-memory and MPI-backend runs in the same
# rounds, and their ratios new / baseline (before and after a change, side
# by side).
#
#   scripts/compare-mpi.sh [NP...]                 (default: 2 4)
#   REPS=5 MAX=16M BASELINE=/tmp/old/weft scripts/compare-mpi.sh 2
set -euo pipefail
cd "$(dirname "$0")/.."
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 4)
reps=${REPS:-3}
baseline=${BASELINE:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
best_glibc=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.arena_max=1
nocopy=(--mca btl_vader_single_copy_mechanism none)
best=(-x GLIBC_TUNABLES=$best_glibc "${nocopy[@]}")
cma=(-x GLIBC_TUNABLES=$best_glibc)
cmarab=(-x GLIBC_TUNABLES=$best_glibc --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 6)

make -s build
mkdir -p bin
mpicc -O2 -o bin/mpi_allreduce scripts/peers/mpi_allreduce.c
sizes=(8)
for ((s = 65536; s <= $(numfmt --from=iec "${MAX:-256M}"); s *= 4)); do sizes+=("$s"); done

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
weft() { # label binary backend np size [mpirun args...]
  local label=$1 bin=$2 backend=$3 np=$4 s=$5
  shift 5
  GLIBC_TUNABLES=${GT:-} mpirun "$@" -np "$np" -x WEFT_BACKEND="$backend" "$bin" bench allreduce -b "$s" -e "$s" --csv |
    awk -F, -v w="$label" -v np="$np" '$8=="out-of-place" {print w, np, $3, $9, $11}'
}
for np in "${nps[@]}"; do
  for rep in $(seq "$reps"); do
    for s in "${sizes[@]}"; do
      weft weft-shm bin/weft tcp "$np" "$s" >>"$raw"
      weft weft-mpi bin/weft mpi "$np" "$s" "${nocopy[@]}" >>"$raw"
      if [ -n "$baseline" ]; then
        weft base-shm "$baseline" tcp "$np" "$s" >>"$raw"
        weft base-mpi "$baseline" mpi "$np" "$s" "${nocopy[@]}" >>"$raw"
      fi
      mpirun -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-default", np, $3, $4, $6}' >>"$raw"
      GLIBC_TUNABLES=$best_glibc mpirun "${best[@]}" -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-nocopy", np, $3, $4, $6}' >>"$raw"
      GLIBC_TUNABLES=$best_glibc mpirun "${cma[@]}" -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-cma", np, $3, $4, $6}' >>"$raw"
      GLIBC_TUNABLES=$best_glibc mpirun "${cmarab[@]}" -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-cmarab", np, $3, $4, $6}' >>"$raw"
      bin/mpi_allreduce copy "$s" | awk -v np="$np" '{print "memcpy", np, $1, $2, $3}' >>"$raw"
    done
  done
done

head="| ranks | size (B) | weft shm | weft mpi backend | Open MPI default | no single copy | CMA | CMA + Rabenseifner | Open MPI best | memcpy bound | weft shm / best | mpi backend / best |"
sep="|---|---|---|---|---|---|---|---|---|---|---|---|"
if [ -n "$baseline" ]; then
  head="$head baseline shm | baseline mpi | shm new / baseline | mpi new / baseline |"
  sep="$sep---|---|---|---|"
fi
echo "$head"
echo "$sep"
awk -v withbase="${baseline:+1}" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return -1
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  # ratio of a to b: busbw a/b, or at 8 bytes the time a/b
  function ratio(a, b, small) { return small ? sprintf("time %.2fx", a / b) : sprintf("%.2f", a / b) }
  { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    v = ($3 == 8) ? $4 : $5; x[$1, k] = x[$1, k] " " v }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]; split(k, f, " "); small = (f[2] == 8); u = small ? " us" : ""
      w = median(x["weft-shm", k]); m = median(x["weft-mpi", k])
      nc = median(x["ompi-nocopy", k]); cm = median(x["ompi-cma", k]); cr = median(x["ompi-cmarab", k])
      # best: highest busbw, or lowest time at 8 bytes
      b = nc; bn = "no single copy"
      if (small ? cm < b : cm > b) { b = cm; bn = "CMA" }
      if (small ? cr < b : cr > b) { b = cr; bn = "CMA + Rabenseifner" }
      line = sprintf("| %d | %d | %s%s | %s%s | %s%s | %s%s | %s%s | %s%s | %s (%s) | %s | %s | %s |", f[1], f[2], w, u, m, u,
        median(x["ompi-default", k]), u, nc, u, cm, u, cr, u, b, bn, small ? "-" : median(x["memcpy", k]), ratio(w, b, small), ratio(m, b, small))
      if (withbase) {
        bw = median(x["base-shm", k]); bm = median(x["base-mpi", k])
        line = line sprintf(" %s%s | %s%s | %s | %s |", bw, u, bm, u, ratio(w, bw, small), ratio(m, bm, small))
      }
      print line
    }
  }' "$raw"
