#!/usr/bin/env bash
# What a wait costs when ranks outnumber cores (issue 32): one rank
# computes (a fixed integer loop, about WORK seconds alone) while the
# others wait for it, in a blocking Recv of the message it sends when done
# and in an AllReduce of one double it joins when done; examples/waitcost
# (Weft) and its C twin scripts/peers/waitcost.c (Open MPI) measure it the
# same way. Per configuration, three figures, each "recv / allreduce":
#
#   - slowdown: the computing rank's time for the work over its time alone
#     (measured in the same run while the other ranks sleep in the kernel);
#   - waiter CPU: the waiters' CPU seconds (getrusage, user + system) per
#     second of waiting, their mean: 1.00 is a core each;
#   - wake-up: the latency of the message that ends the wait, sender's
#     stamp to the waiter's return (CLOCK_MONOTONIC), median over waiters,
#     in microseconds.
#
# Policies (columns): Weft on its own transports (WEFT_BACKEND=tcp: shared
# memory here) with WEFT_SPIN unset (auto), WEFT_SPIN=0 (sleep at once)
# and WEFT_SPIN=10ms (a long spin); Weft's mpi backend (WEFT_BACKEND=mpi,
# where Open MPI's headers let the program be built with -tags mpi); the C
# twin with Open MPI's defaults and with --mca mpi_yield_when_idle 1.
# Rows: NPS ranks on this host, pinned and unpinned. Pinned is mpirun's
# default where the ranks fit the CPUs (a core a rank); with more ranks
# than CPUs mpirun binds nothing by default (the unpinned row), so pinned
# there is --bind-to core:overload-allowed (ranks dealt round the cores,
# rank 0 sharing core 0). Unpinned is --bind-to none. Every configuration
# runs REPS times, the policies alternating; the tables give medians. The
# script fails if a program does (a wait ended by a message that is not
# the computing rank's stamp).
#
#   scripts/bench-wait.sh
#   REPS=5 NPS="2 4 6 8" scripts/bench-wait.sh
#   WORK=0.02 ROUNDS=25 scripts/bench-wait.sh   (short waits: where a spin counts)
#   REPS=1 WORK=0.05 NPS="2 3" scripts/bench-wait.sh   (a quick check)
#
# Knobs: REPS (3); WORK: seconds of work alone (1); ROUNDS: rounds of
# each wait in a run (1; the medians take every round of every run);
# NPS: rank counts ("2 4 6"); BIND: which bindings ("pinned unpinned");
# POLICIES: which columns ("auto spin0 spin10ms mpi c c-yield").
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
work=${WORK:-1}
rounds=${ROUNDS:-1}
nps=${NPS:-2 4 6}
binds=${BIND:-pinned unpinned}
policies=${POLICIES:-auto spin0 spin10ms mpi c c-yield}
fail() { echo "bench-wait.sh: $*" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]*$ ]] || fail "REPS=$reps: want a count of 1 or more"
[[ $work =~ ^[0-9]*\.?[0-9]+$ ]] || fail "WORK=$work: want seconds, 0.01 to 60"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || fail "ROUNDS=$rounds: want a count of 1 or more"
for np in $nps; do [[ $np =~ ^[0-9]+$ && $np -ge 2 ]] || fail "NPS: $np is not a rank count of 2 or more"; done
for bind in $binds; do [[ $bind = pinned || $bind = unpinned ]] || fail "BIND: unknown binding $bind (pinned unpinned)"; done
for pol in $policies; do
  [[ " auto spin0 spin10ms mpi c c-yield " = *" $pol "* ]] || fail "POLICIES: unknown policy $pol (auto spin0 spin10ms mpi c c-yield)"
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
  OMPI_MCA_rmaps_base_oversubscribe=1
tags=()
if pkg-config --exists ompi-c 2>/dev/null; then tags=(-tags mpi); fi
mkdir -p bin
go build "${tags[@]}" -o bin/waitcost ./examples/waitcost
mpicc -O2 -o bin/waitcost_c scripts/peers/waitcost.c
cpus=$(nproc)

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
bindargs() { # NP BIND
  if [ "$2" = unpinned ]; then
    echo --bind-to none
  elif [ "$1" -gt "$cpus" ]; then
    echo --bind-to core:overload-allowed
  fi
}
one() { # NP BIND POLICY: appends "NP BIND POLICY WAIT SLOWDOWN CPU_PER_S LAT_MED_US" lines
  local np=$1 bind=$2 pol=$3 cmd
  case $pol in
  auto) cmd=(-x WEFT_BACKEND=tcp bin/waitcost -work "${work}s" -rounds "$rounds") ;;
  spin0) cmd=(-x WEFT_BACKEND=tcp -x WEFT_SPIN=0 bin/waitcost -work "${work}s" -rounds "$rounds") ;;
  spin10ms) cmd=(-x WEFT_BACKEND=tcp -x WEFT_SPIN=10ms bin/waitcost -work "${work}s" -rounds "$rounds") ;;
  mpi)
    [ ${#tags[@]} -gt 0 ] || return 0
    cmd=(-x WEFT_BACKEND=mpi bin/waitcost -work "${work}s" -rounds "$rounds")
    ;;
  c) cmd=(bin/waitcost_c "$work" "$rounds") ;;
  c-yield) cmd=(--mca mpi_yield_when_idle 1 bin/waitcost_c "$work" "$rounds") ;;
  esac
  mpirun -np "$np" $(bindargs "$np" "$bind") "${cmd[@]}" |
    awk -v p="$np $bind $pol" '$1 == "recv" || $1 == "allreduce" {print p, $1, $3, $4, $5}' >>"$raw"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$reps"); do
  echo "# round $rep of $reps, load $(cut -d' ' -f1 /proc/loadavg)" >&2
  for np in $nps; do
    for bind in $binds; do
      for pol in $policies; do
        one "$np" "$bind" "$pol"
      done
    done
  done
done

echo "# $(mpirun --version | head -1), $cpus CPUs, load $load0 at the start and $(cut -d' ' -f1-3 /proc/loadavg) at the end, REPS=$reps, WORK=${work}s, ROUNDS=$rounds; medians, each cell recv / allreduce"
awk -v nps="$nps" -v binds="$binds" -v pols="$policies" -v cpus="$cpus" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " "); if (n == 0) return ""
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function cell(k, m, f,   r, a) {
    r = median(v[k, "recv", m]); a = median(v[k, "allreduce", m])
    return (r == "" ? "-" : sprintf(f, r)) " / " (a == "" ? "-" : sprintf(f, a))
  }
  { k = $1 SUBSEP $2 SUBSEP $3; for (m = 1; m <= 3; m++) v[k, $4, m] = v[k, $4, m] " " $(4 + m) }
  END {
    nn = split(nps, ns, " "); nb = split(binds, bs, " "); np = split(pols, ps, " ")
    split("the computing rank'"'"'s slowdown (time / time alone)|waiter CPU seconds per second of waiting|wake-up latency, median over waiters (us)", titles, "|")
    split("%.2f|%.2f|%.0f", fmts, "|")
    for (m = 1; m <= 3; m++) {
      printf "\n%s\n\n| ranks | binding |", titles[m]
      for (p = 1; p <= np; p++) printf " %s |", ps[p]
      printf "\n|---|---|"
      for (p = 1; p <= np; p++) printf "---|"
      printf "\n"
      for (i = 1; i <= nn; i++) for (j = 1; j <= nb; j++) {
        b = bs[j]
        if (b == "pinned") b = ns[i] > cpus ? "pinned (overload)" : "pinned"
        printf "| %d | %s |", ns[i], b
        for (p = 1; p <= np; p++) printf " %s |", cell(ns[i] SUBSEP bs[j] SUBSEP ps[p], m, fmts[m])
        printf "\n"
      }
    }
  }' "$raw"
