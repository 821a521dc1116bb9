#!/usr/bin/env bash
# Allreduce on one host, in one run: Weft over shared memory, Weft's MPI
# backend, and Open MPI's MPI_Allreduce with its defaults and with its best
# settings here: no single-copy mechanism (btl_vader_single_copy_mechanism,
# `ompi_info --param btl vader --level 9`) and glibc keeping freed memory
# (GLIBC_TUNABLES below: mmap_max=0 and a 16 GiB trim_threshold, mallopt(3)'s
# M_MMAP_MAX and M_TRIM_THRESHOLD), since Open MPI's allreduce algorithms
# malloc their temporary buffers on every call (coll_base_allreduce.c)
# and fresh pages are slow to touch (docs/BENCHMARKS.md, "The machine");
# plus a memcpy of the same bytes as the memory bound. For
# each rank count and size the runs alternate, REPS times; the table gives
# medians of busbw (GB/s; time in us at 8 bytes) and Weft-shm / best Open MPI.
#
#   scripts/compare-mpi.sh [NP...]        (default: 2 4)
set -euo pipefail
cd "$(dirname "$0")/.."
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 4)
reps=${REPS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
best_glibc=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184

make -s build
mkdir -p bin
mpicc -O2 -o bin/mpi_allreduce scripts/peers/mpi_allreduce.c
sizes=(8)
for ((s = 65536; s <= ${MAX:-268435456}; s *= 8)); do sizes+=("$s"); done

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
weft() { # backend np size
  mpirun -np "$2" -x WEFT_BACKEND="$1" bin/weft bench allreduce -b "$3" -e "$3" --csv |
    awk -F, -v w="weft-$1" -v np="$2" '$8=="out-of-place" {print w, np, $3, $9, $11}'
}
for np in "${nps[@]}"; do
  for rep in $(seq "$reps"); do
    for s in "${sizes[@]}"; do
      weft tcp "$np" "$s" >>"$raw"
      weft mpi "$np" "$s" >>"$raw"
      mpirun -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-default", np, $3, $4, $6}' >>"$raw"
      GLIBC_TUNABLES=$best_glibc mpirun -x GLIBC_TUNABLES --mca btl_vader_single_copy_mechanism none \
        -np "$np" bin/mpi_allreduce "$s" "$s" 2 |
        awk -F, -v np="$np" 'NR>1 {print "ompi-best", np, $3, $4, $6}' >>"$raw"
      bin/mpi_allreduce copy "$s" | awk -v np="$np" '{print "memcpy", np, $1, $2, $3}' >>"$raw"
    done
  done
done

echo "| ranks | size (B) | weft shm | weft mpi backend | Open MPI default | Open MPI best | memcpy bound | weft shm / best |"
echo "|---|---|---|---|---|---|---|---|"
awk '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return -1
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    v = ($3 == 8) ? $4 : $5; x[$1, k] = x[$1, k] " " v }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]; split(k, f, " "); u = (f[2] == 8) ? " us" : ""
      w = median(x["weft-tcp", k]); b = median(x["ompi-best", k])
      r = (f[2] == 8) ? sprintf("time %.2fx", w / b) : sprintf("%.2f", w / b)
      printf "| %d | %d | %s%s | %s%s | %s%s | %s%s | %s | %s |\n", f[1], f[2], w, u, median(x["weft-mpi", k]), u,
        median(x["ompi-default", k]), u, b, u, (f[2] == 8) ? "-" : median(x["memcpy", k]), r
    }
  }' "$raw"
