#!/usr/bin/env bash
# Point-to-point on one host, Weft next to C on Open MPI, in one run:
#
#   - latency and bandwidth (weft bench latency|bandwidth against
#     scripts/peers/osu_p2p.c, the same OSU-style protocol, sizes and
#     iteration counts) at 2 ranks: Weft's shared memory (WEFT_BACKEND=tcp)
#     against Open MPI's shared memory as it comes (vader with its CMA
#     single copy, what a C user gets) and with the best settings below,
#     Weft's MPI backend against the latter, and Weft's TCP (WEFT_SHM=off)
#     against Open MPI's TCP (--mca btl tcp,self);
#   - the 2-D Jacobi solver (examples/jacobi against scripts/peers/jacobi.c)
#     at 256x256 for 5000 iterations, residual every 10, on 2 ranks (small
#     halos: latency-bound), and at 2048x2048 for 200 iterations on 2 and 4
#     ranks (bandwidth-bound), on Weft's tcp and mpi backends and in C.
#
# Besides its defaults, the C peer, and Weft's MPI backend, run with Open
# MPI's best settings for allreduce (as scripts/compare-mpi.sh): no
# single-copy mechanism
# (btl_vader_single_copy_mechanism none) and glibc keeping freed memory in
# one arena (GLIBC_TUNABLES; a Go process would otherwise malloc from an
# arena per thread). Every configuration runs REPS times, Weft and C
# alternating, and the tables give medians: time in us (latency: half the
# round trip; Jacobi: per iteration, the slowest rank's) or MB/s (1e6
# bytes/s), and the ratio Weft / C (of times for latency and Jacobi, of
# bandwidths for bandwidth). The script fails if a byte arrives wrong or if
# the Jacobi checksums of one grid differ between any two runs (rank
# counts, backends, languages).
#
#   scripts/bench-p2p.sh
#   REPS=5 MIN=0 MAX=4M FACTOR=2 scripts/bench-p2p.sh
#   REPS=1 MAX=64K SMALL_ITERS=500 LARGE_N=512 LARGE_ITERS=20 scripts/bench-p2p.sh   (a quick check)
#   REPS=3 MIN=64K MAX=64M FACTOR=4 JACOBI=0 BASE=/tmp/weft-main scripts/bench-p2p.sh   (a change against a build of main)
#
# Knobs: REPS (3); MIN, MAX, FACTOR: the message sizes, bytes with K, M, G
# (1, 4M, 4); SMALL_N, SMALL_ITERS (256, 5000), LARGE_N, LARGE_ITERS (2048,
# 200): the Jacobi grids and iterations; EVERY (10): the residual's period;
# JACOBI (1): 0 leaves the Jacobi runs out; BASE: another weft binary (an
# earlier build) whose shared memory runs beside bin/weft's, alternating,
# in a column of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
min=$(numfmt --from=iec "${MIN:-1}")
max=$(numfmt --from=iec "${MAX:-4M}")
factor=${FACTOR:-4}
small_n=${SMALL_N:-256}
small_iters=${SMALL_ITERS:-5000}
large_n=${LARGE_N:-2048}
large_iters=${LARGE_ITERS:-200}
every=${EVERY:-10}
jacobi_on=${JACOBI:-1}
base=${BASE:-}
if [ -n "$base" ] && [ ! -x "$base" ]; then
  echo "bench-p2p.sh: BASE=$base is not an executable weft binary" >&2
  exit 2
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
best_glibc=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.arena_max=1
best=(-x GLIBC_TUNABLES=$best_glibc --mca btl_vader_single_copy_mechanism none)
tcp=(-x GLIBC_TUNABLES=$best_glibc --mca btl tcp,self)

make -s build
mkdir -p bin
mpicc -O2 -o bin/osu_p2p scripts/peers/osu_p2p.c
mpicc -O2 -ffp-contract=off -o bin/jacobi_c scripts/peers/jacobi.c
go build $(pkg-config --exists ompi-c 2>/dev/null && echo -tags mpi) -o bin/jacobi ./examples/jacobi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

# p2p KIND LABEL CMD...: one sweep of the sizes, as "KIND LABEL size value wrong"
# (value: time_us for latency, bandwidth_mbs for bandwidth).
p2p() {
  local kind=$1 label=$2
  shift 2
  GLIBC_TUNABLES=${GT:-} "$@" | awk -F, -v k="$kind" -v l="$label" \
    'NR > 1 && $1 != "op" {print k, l, $3, (k == "latency" ? $5 : $6), $7}' >>"$raw"
}
weft_p2p() { # KIND LABEL [mpirun args...]
  local kind=$1 label=$2
  shift 2
  p2p "$kind" "$label" mpirun -np 2 "$@" ${WEFT_BIN:-bin/weft} bench "$kind" -b "$min" -e "$max" -f "$factor" --csv
}
c_p2p() { # KIND LABEL [mpirun args...]
  local kind=$1 label=$2
  shift 2
  p2p "$kind" "$label" mpirun "$@" -np 2 bin/osu_p2p "$kind" "$min" "$max" "$factor"
}
# jacobi LABEL NP N ITERS CMD...: one solve, as "jacobi LABEL N/ITERS/NP time_us checksum comm_us".
jacobi() {
  local label=$1 np=$2 n=$3 iters=$4
  shift 4
  GLIBC_TUNABLES=${GT:-} "$@" | awk -F': ' -v l="$label" -v k="$n/$iters/$np" '
    $1 == "time per iteration (us)" {t = $2} $1 == "checksum" {c = $2} $1 == "communication per iteration (us)" {m = $2}
    END {if (t == "" || c == "" || m == "") exit 1; print "jacobi", l, k, t, c, m}' >>"$raw"
}
weft_jacobi() { # LABEL BACKEND NP N ITERS [mpirun args...]
  local label=$1 backend=$2 np=$3 n=$4 iters=$5
  shift 5
  jacobi "$label" "$np" "$n" "$iters" mpirun "$@" -np "$np" -x WEFT_BACKEND="$backend" bin/jacobi -n "$n" -iters "$iters" -every "$every"
}
c_jacobi() { # NP N ITERS
  GT=$best_glibc jacobi c "$1" "$2" "$3" mpirun "${best[@]}" -np "$1" bin/jacobi_c "$2" "$3" "$every"
}

for rep in $(seq "$reps"); do
  echo "# round $rep of $reps" >&2
  for kind in latency bandwidth; do
    weft_p2p "$kind" weft-shm -x WEFT_BACKEND=tcp
    c_p2p "$kind" c-cma
    if [ -n "$base" ]; then WEFT_BIN=$base weft_p2p "$kind" weft-base -x WEFT_BACKEND=tcp; fi
    GT=$best_glibc c_p2p "$kind" c-shm "${best[@]}"
    GT=$best_glibc weft_p2p "$kind" weft-mpi "${best[@]}" -x WEFT_BACKEND=mpi
    weft_p2p "$kind" weft-tcp -x WEFT_BACKEND=tcp -x WEFT_SHM=off
    GT=$best_glibc c_p2p "$kind" c-tcp "${tcp[@]}"
  done
  for cfg in "2 $small_n $small_iters" "2 $large_n $large_iters" "4 $large_n $large_iters"; do
    [ "$jacobi_on" = 0 ] && break
    read -r np n iters <<<"$cfg"
    weft_jacobi weft-tcp tcp "$np" "$n" "$iters"
    c_jacobi "$np" "$n" "$iters"
    GT=$best_glibc weft_jacobi weft-mpi mpi "$np" "$n" "$iters" "${best[@]}"
  done
done

echo "# $(mpirun --version | head -1), $(nproc) CPUs, REPS=$reps; medians"
awk '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
  function num(x, d) { return x == "" ? "-" : sprintf(d, x) }
  $1 != "jacobi" {
    k = $1 SUBSEP $3; if (!(k in seen)) { seen[k] = 1; sizes[$1, ++ns[$1]] = $3 }
    v[$1, $2, $3] = v[$1, $2, $3] " " $4; wrong[$1, $3] += $5
  }
  $1 == "jacobi" {
    if (!($3 in jseen)) { jseen[$3] = 1; jorder[++nj] = $3 }
    jt[$2, $3] = jt[$2, $3] " " $4; jc[$2, $3] = jc[$2, $3] " " $6
    split($3, f, "/"); g = f[1] "/" f[2]
    if (!(g in sum)) sum[g] = $5
    else if (sum[g] != $5) bad = bad sprintf("\n  grid %sx%s, %s iterations: %s on %s ranks gave %s, an earlier run %s", f[1], f[1], f[2], $2, f[3], $5, sum[g])
    if (($3 in sums) && sums[$3] != $5) kbad[$3] = 1
    sums[$3] = $5
  }
  END {
    for (t = 1; t <= 2; t++) {
      kind = t == 1 ? "latency" : "bandwidth"; u = t == 1 ? "us" : "MB/s"; r = t == 1 ? "time" : "bw"
      print ""
      printf "%s, 2 ranks (%s; ratios %s weft / C)\n\n", kind, u, r
      printf "| size (B) | weft shm |%s Open MPI shm (default: CMA) | weft/C | Open MPI shm (no single copy) | weft/C | weft mpi backend | mpi backend/C | weft tcp | Open MPI tcp | weft/C | #wrong |\n", hasbase ? " weft shm (BASE) | weft/BASE |" : ""
      printf "|---|---|%s---|---|---|---|---|---|---|---|---|---|\n", hasbase ? "---|---|" : ""
      for (i = 1; i <= ns[kind]; i++) {
        s = sizes[kind, i]
        ws = median(v[kind, "weft-shm", s]); cs = median(v[kind, "c-shm", s]); wm = median(v[kind, "weft-mpi", s])
        cc = median(v[kind, "c-cma", s]); wb = median(v[kind, "weft-base", s])
        wt = median(v[kind, "weft-tcp", s]); ct = median(v[kind, "c-tcp", s])
        printf "| %d | %s |%s %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", s, num(ws, "%.2f"),
          hasbase ? sprintf(" %s | %s |", num(wb, "%.2f"), ratio(ws, wb)) : "", num(cc, "%.2f"), ratio(ws, cc),
          num(cs, "%.2f"), ratio(ws, cs), num(wm, "%.2f"), ratio(wm, cs), num(wt, "%.2f"), num(ct, "%.2f"), ratio(wt, ct), wrong[kind, s]
        allwrong += wrong[kind, s]
      }
    }
    if (nj > 0) { # JACOBI=0 leaves them out
      print ""
      print "Jacobi (us per iteration, and in brackets the part spent communicating; ratios of times weft / C)"
      print ""
      print "| grid | ranks | iterations | weft tcp | weft mpi backend | C | tcp/C | mpi backend/C | checksum |"
      print "|---|---|---|---|---|---|---|---|---|"
      for (i = 1; i <= nj; i++) {
        k = jorder[i]; split(k, f, "/")
        wt = median(jt["weft-tcp", k]); wm = median(jt["weft-mpi", k]); c = median(jt["c", k])
        printf "| %dx%d | %d | %d | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s |\n", f[1], f[1], f[3], f[2],
          num(wt, "%.1f"), num(median(jc["weft-tcp", k]), "%.1f"), num(wm, "%.1f"), num(median(jc["weft-mpi", k]), "%.1f"),
          num(c, "%.1f"), num(median(jc["c", k]), "%.1f"), ratio(wt, c), ratio(wm, c), (k in kbad) ? "DIFFER" : sums[k]
      }
    }
    status = 0
    if (allwrong > 0) { printf "\nFAILED: %d bytes arrived wrong (the #wrong columns)\n", allwrong > "/dev/stderr"; status = 1 }
    if (bad != "") { printf "\nFAILED: the Jacobi checksums differ:%s\n", bad > "/dev/stderr"; status = 1 }
    exit status
  }' hasbase="$([ -n "$base" ] && echo 1 || echo 0)" "$raw"
