#!/usr/bin/env bash
# What a user's own program gets (issue 32), beside the C twin on Open MPI
# and beside weft bench, in one run on one host, 2 ranks:
#
#   - pingpong: examples/pingpong (a blocking Send/Recv ping-pong written
#     as a user writes it) against scripts/peers/osu_p2p.c latency, half
#     the round trip, sizes MIN..MAX doubling; weft bench latency (tcp)
#     beside them;
#   - allreduce1: examples/allreduce1 (one float64 AllReduce sum in a
#     loop) against scripts/peers/mpi_allreduce.c at 8 bytes; weft bench
#     allreduce -b 8 (tcp) beside them.
#
# Every program runs as a user launches it, in the default environment:
# `mpirun -np 2` with Open MPI's default binding (pinned: a core a rank)
# and with --bind-to none (unpinned, what srun gives without --cpu-bind);
# Weft on its own transports (WEFT_BACKEND=tcp: shared memory here) and on
# the default backend (no WEFT_BACKEND: mpi where Open MPI's headers let
# the programs be built with -tags mpi, else tcp). No GOMAXPROCS, no
# GLIBC_TUNABLES, no MCA setting beyond what running as root on loopback
# needs. Each configuration runs REPS times, Weft and C alternating; the
# tables give medians and the ratios Weft / C of times. The script fails
# if a program reports a wrong byte or sum.
#
#   scripts/bench-user.sh
#   BASE=96a5f71 scripts/bench-user.sh   (the library before and after)
#   REPS=1 MAX=1K ITERS=200 scripts/bench-user.sh   (a quick check)
#
# Knobs: REPS (5); MIN, MAX: ping-pong sizes, bytes with K (8, 64K);
# ITERS: fixed iterations for every program (default: each program's own
# choice, 10 to 10000 round trips by size, 10000 allreduces; the C
# allreduce peer times 1000); BIND: which bindings ("pinned unpinned");
# BASE: a git revision whose library the same user programs are built
# against too, run on the tcp backend beside the others (column "base
# tcp"), to measure a change of the library in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-5}
min=$(numfmt --from=iec "${MIN:-8}")
max=$(numfmt --from=iec "${MAX:-64K}")
iters=${ITERS:-0}
binds=${BIND:-pinned unpinned}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
tags=()
if pkg-config --exists ompi-c 2>/dev/null; then tags=(-tags mpi); fi
mkdir -p bin
go build "${tags[@]}" -o bin/weft ./cmd/weft
go build "${tags[@]}" -o bin/pingpong ./examples/pingpong
go build "${tags[@]}" -o bin/allreduce1 ./examples/allreduce1
mpicc -O2 -o bin/osu_p2p scripts/peers/osu_p2p.c
mpicc -O2 -o bin/mpi_allreduce scripts/peers/mpi_allreduce.c
default=$([ ${#tags[@]} -gt 0 ] && echo mpi || echo tcp)
base=${BASE:-}
if [ -n "$base" ]; then
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$base"
  mkdir -p "$wt/examples/pingpong" "$wt/examples/allreduce1"
  cp examples/pingpong/main.go "$wt/examples/pingpong/"
  cp examples/allreduce1/main.go "$wt/examples/allreduce1/"
  (cd "$wt" && go build "${tags[@]}" -o "$OLDPWD/bin/pingpong.base" ./examples/pingpong &&
    go build "${tags[@]}" -o "$OLDPWD/bin/allreduce1.base" ./examples/allreduce1)
  git worktree remove --force "$wt"
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
# Each run appends "KIND BIND LABEL SIZE US WRONG" lines to $raw.
bindargs() { [ "$1" = unpinned ] && echo --bind-to none || true; }
pp_args=(-min "$min" -max "$max")
ar_args=()
bench_iters=()
c_iters=()
if [ "$iters" != 0 ]; then
  pp_args+=(-iters "$iters" -warmup 10)
  ar_args+=(-iters "$iters" -warmup 10)
  bench_iters=(-n "$iters" -w 2)
  c_iters=("$iters" 2)
fi
user_pp() { # BIND LABEL [mpirun args...]
  local bind=$1 label=$2 prog=bin/pingpong
  shift 2
  [ "$label" = base ] && prog=bin/pingpong.base
  mpirun -np 2 $(bindargs "$bind") "$@" $prog "${pp_args[@]}" |
    awk -v b="$bind" -v l="$label" '!/^#/ {print "pingpong", b, l, $1, $2, 0}' >>"$raw"
}
bench_pp() { # BIND
  mpirun -np 2 $(bindargs "$1") -x WEFT_BACKEND=tcp bin/weft bench latency -b "$min" -e "$max" -f 2 "${bench_iters[@]}" --csv |
    awk -F, -v b="$1" 'NR > 1 {print "pingpong", b, "bench", $3, $5, $7}' >>"$raw"
}
c_pp() { # BIND
  mpirun -np 2 $(bindargs "$1") bin/osu_p2p latency "$min" "$max" 2 "${c_iters[@]}" |
    awk -F, -v b="$1" 'NR > 1 {print "pingpong", b, "c", $3, $5, $7}' >>"$raw"
}
user_ar() { # BIND LABEL [mpirun args...]
  local bind=$1 label=$2 prog=bin/allreduce1
  shift 2
  [ "$label" = base ] && prog=bin/allreduce1.base
  mpirun -np 2 $(bindargs "$bind") "$@" $prog "${ar_args[@]}" |
    awk -F': ' -v b="$bind" -v l="$label" '$1 == "us per call" {print "allreduce", b, l, 8, $2, 0}' >>"$raw"
}
bench_ar() { # BIND
  mpirun -np 2 $(bindargs "$1") -x WEFT_BACKEND=tcp bin/weft bench allreduce -b 8 -e 8 -d float64 "${bench_iters[@]}" --csv |
    awk -F, -v b="$1" '$8 == "out-of-place" {print "allreduce", b, "bench", 8, $9, $12}' >>"$raw"
}
c_ar() { # BIND
  mpirun -np 2 $(bindargs "$1") bin/mpi_allreduce 8 8 2 |
    awk -F, -v b="$1" 'NR > 1 {print "allreduce", b, "c", 8, $4, 0}' >>"$raw"
}

for rep in $(seq "$reps"); do
  echo "# round $rep of $reps" >&2
  for bind in $binds; do
    user_pp "$bind" tcp -x WEFT_BACKEND=tcp
    c_pp "$bind"
    user_pp "$bind" default
    bench_pp "$bind"
    if [ -n "$base" ]; then user_pp "$bind" base -x WEFT_BACKEND=tcp; fi
    user_ar "$bind" tcp -x WEFT_BACKEND=tcp
    c_ar "$bind"
    user_ar "$bind" default
    bench_ar "$bind"
    if [ -n "$base" ]; then user_ar "$bind" base -x WEFT_BACKEND=tcp; fi
  done
done

echo "# $(mpirun --version | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), REPS=$reps; medians"
echo "# weft tcp: WEFT_BACKEND=tcp; weft default: no WEFT_BACKEND ($default); bench: weft bench, WEFT_BACKEND=tcp${base:+; base tcp: the library at $base, WEFT_BACKEND=tcp}"
awk -v binds="$binds" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
  function num(x) { return x == "" ? "-" : sprintf("%.2f", x) }
  {
    k = $1 SUBSEP $2 SUBSEP $4
    if (!(k in seen)) { seen[k] = 1; sizes[$1, $2, ++ns[$1, $2]] = $4 }
    v[$1, $2, $3, $4] = v[$1, $2, $3, $4] " " $5; wrong += $6
  }
  END {
    nb = split(binds, bs, " ")
    for (t = 1; t <= 2; t++) {
      kind = t == 1 ? "pingpong" : "allreduce"
      for (i = 1; i <= nb; i++) {
        b = bs[i]
        print ""
        printf "%s, 2 ranks, %s (us; ratios of times weft / C)\n\n", kind == "pingpong" ? "blocking ping-pong, half round trip" : "1-double AllReduce per call", b
        print "| size (B) | weft tcp | weft default | C Open MPI | tcp/C | default/C | weft bench | bench/C | base tcp | base/C |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (j = 1; j <= ns[kind, b]; j++) {
          s = sizes[kind, b, j]
          wt = median(v[kind, b, "tcp", s]); wd = median(v[kind, b, "default", s]); c = median(v[kind, b, "c", s]); wb = median(v[kind, b, "bench", s])
          wo = median(v[kind, b, "base", s])
          printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, num(wt), num(wd), num(c), ratio(wt, c), ratio(wd, c), num(wb), ratio(wb, c), num(wo), ratio(wo, c)
        }
      }
    }
    if (wrong > 0) { printf "\nFAILED: %d bytes arrived wrong\n", wrong > "/dev/stderr"; exit 1 }
  }' "$raw"
