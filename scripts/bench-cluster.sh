#!/usr/bin/env bash
# An emulated cluster on this machine, and on it Weft beside Open MPI.
#
# Test hosts are network namespaces (ip-netns(8)), each with its own host
# name (a UTS namespace, unshare(1)), joined by veth pairs to a bridge that
# lives in a namespace of its own, on a private subnet (10.99.0.0/24) that
# exists only inside them: nothing is sent to an address of the machine's
# own namespace. Each link is shaped by tc on both of its ends (the host's
# and the switch's), so that every host sends and receives at most the
# link's rate: tc-tbf(8), a token bucket, because it is the one rate
# qdisc built into this kernel (with htb, tc-htb(8)) that reached the rate
# (measured: a single TCP stream through tbf at 1 Gbit/s moved 0.96
# Gbit/s, through htb 0.92; at 10 Gbit/s 7.9 and 6.7, where this 2-core
# machine's CPU, not the qdisc, is the limit). The delay goes into
# tc-netem(8) on the host's end, with the tbf under it (netem's manual,
# "rate control"); where the kernel has no netem (CONFIG_NET_SCH_NETEM is
# not set here) the script says so and runs the rate alone. Each shape's
# rate and latency are measured before its runs (one TCP stream host 0 ->
# host 1, `weft bench bandwidth`, and half the round trip, `weft bench
# latency`).
#
# On the same hosts, for each link shape, layout (HOSTSxRANKS) and
# collective, REPS rounds alternate:
#   weft      Weft's own transports (WEFT_BACKEND=tcp: shared memory inside
#             a host, TCP between hosts, hierarchical collectives)
#   weft-mpi  Weft's MPI backend (the binary built with -tags mpi,
#             WEFT_BACKEND=mpi) over Open MPI
#   ompi      Open MPI's MPI_Allreduce, MPI_Bcast, MPI_Allgather from C
#             (scripts/peers/mpi_coll.c) with its best settings here
# each launched by mpirun inside the first test host, whose launch agent
# (plm_rsh_agent, a script in the run's temporary folder) enters the
# others with `ip netns exec` and a hostfile of the test hosts. Open MPI's
# best settings: vader without a single-copy mechanism inside a host,
# glibc keeping freed memory (as scripts/compare-mpi.sh explains), TCP
# between hosts with two TCP connections per peer (btl_tcp_links,
# OMPI_TCP_LINKS), yielding the CPU while it waits (mpi_yield_when_idle:
# Open MPI turns it on itself when it knows a node is oversubscribed, and
# here every test host shares this machine's two cores), and no process
# binding (every test host would bind its ranks to the same cores). Each
# was measured here: at 1 Gbit/s with 2 ms queues at both ends of the
# links, 2 hosts x 1 rank, allreduce 1-16 MiB, busbw 0.04 GB/s with Open MPI's defaults, 0.05-0.06 yielding, 0.08-0.11
# with two links as well, 0.08-0.10 with four, 0.05-0.06 with 4 MiB
# socket buffers instead (docs/BENCHMARKS.md).
#
# The table gives medians of busbw (GB/s), the ratios to Open MPI, and
# Weft's busbw as a fraction of the link's rate (4x1: one rank a host, a
# ring's busbw is the bytes each link carries a second; 2x2: two ranks
# share a host's link, and a hierarchical allreduce's busbw can pass the
# line rate).
#
#   scripts/bench-cluster.sh
#   REPS=3 MIN=64K MAX=256M SHAPES="10gbit:25us 1gbit:100us" LAYOUTS="2x2 4x1" \
#     OPS="allreduce broadcast allgather" IMPLS="weft weft-mpi ompi" scripts/bench-cluster.sh
#   SMALL=1 scripts/bench-cluster.sh      (one shape, 2 hosts, two sizes, one round: the check)
#   JOBS="gnn mlp" OPS= scripts/bench-cluster.sh   (training across the test hosts, no collectives)
#
# JOBS trains across the test hosts after each round's collectives, one
# rank a slot, and beside it the same training in one process with its
# ranks as goroutines and the link emulated (--net-gbps at the shape's
# rate): "gnn" is weft train gnn on an SBM graph of GNN_NODES nodes
# (100000; weft gen sbm, partitioned by weft partition --algo bgl, one part
# a rank), BGL's pipeline and the baseline, GNN_EPOCHS epochs (2); "mlp" is
# weft train mlp on Fashion-MNIST's first MLP_LIMIT images (20000), bsp
# and sapipe, one epoch. The second table gives the last epoch's samples/s.
#
# ITERS is the timed iterations per size (5; 0: weft bench's count,
# about 0.3 s of data at 1 GB/s, which at 1 Gbit/s takes ten times as
# long); FACTOR the step between sizes (4); WEFT a
# prebuilt weft binary with the mpi tag; BASELINE another weft binary (an
# older build), run as "weft" is in the same rounds, for a column of its
# own and weft / baseline; WEFT_ENV and BASELINE_ENV, "NAME=VALUE ..."
# settings for the weft and baseline runs alone (BASELINE=the same binary
# and two settings of WEFT_ALGO or WEFT_SOCKET_BUFFER compare those);
# OMPI_EXTRA more mpirun arguments
# for the Open MPI runs (trying other settings); HOLD=FILE keeps the hosts
# after the table until FILE exists (to look at them). Every namespace, link, bridge,
# qdisc and file the script made is removed when it ends, also on Ctrl-C
# or SIGTERM; a run stopped so prints the table of the rounds it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "bench-cluster: $*" >&2; }

if [ "${SMALL:-0}" = 1 ]; then
  : "${REPS:=1}" "${MIN:=64K}" "${MAX:=256K}" "${SHAPES:=1gbit:100us}" "${LAYOUTS:=2x1}" "${OPS:=allreduce}"
  : "${GNN_NODES:=20000}" "${GNN_EPOCHS:=1}" "${MLP_LIMIT:=4000}"
fi
reps=${REPS:-3}
min=$(numfmt --from=iec "${MIN:-64K}")
max=$(numfmt --from=iec "${MAX:-4M}")
factor=${FACTOR:-4}
read -ra shapes <<<"${SHAPES:-10gbit:25us 1gbit:100us}"
read -ra layouts <<<"${LAYOUTS:-2x2 4x1}"
read -ra ops <<<"${OPS-allreduce broadcast allgather}"
read -ra impls <<<"${IMPLS:-weft weft-mpi ompi}"
read -ra jobs <<<"${JOBS:-}"
for j in "${jobs[@]}"; do
  case $j in gnn | mlp) ;; *) say "JOBS: unknown $j (want gnn, mlp)"; exit 2 ;; esac
done
mnist=${MNIST:-/usr/share/datasets/fashion-mnist}
baseline=${BASELINE:-}
if [ -n "$baseline" ]; then
  [ -x "$baseline" ] || { say "BASELINE: $baseline is not an executable"; exit 2; }
  baseline=$(realpath "$baseline")
  impls=(base "${impls[@]}")
fi
# WEFT_ENV, BASELINE_ENV: "NAME=VALUE ..." -> mpirun's -x NAME=VALUE ...
weftenv=() baseenv=()
read -ra _e <<<"${WEFT_ENV:-}"
for v in "${_e[@]}"; do
  [[ $v == [A-Z]*=* ]] || { say "WEFT_ENV: $v is not NAME=VALUE"; exit 2; }
  weftenv+=(-x "$v")
done
read -ra _e <<<"${BASELINE_ENV:-}"
for v in "${_e[@]}"; do
  [[ $v == [A-Z]*=* ]] || { say "BASELINE_ENV: $v is not NAME=VALUE"; exit 2; }
  baseenv+=(-x "$v")
done
iters=${ITERS:-5}
limit=${TIMEOUT:-600} # seconds for one launch

for l in "${layouts[@]}"; do
  [[ $l =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || { say "LAYOUTS: $l is not HOSTSxRANKS (e.g. 2x2)"; exit 2; }
done
for s in "${shapes[@]}"; do
  [[ $s =~ ^[0-9]+[kmg]?bit(:[0-9]+(us|ms))?$ ]] || { say "SHAPES: $s is not RATE[:DELAY] (e.g. 10gbit:25us, 1gbit, none)"; exit 2; }
done
nhosts=0
for l in "${layouts[@]}"; do nhosts=$((${l%x*} > nhosts ? ${l%x*} : nhosts)); done

# --- what this machine allows --------------------------------------------
if [ "$(id -u)" != 0 ]; then
  say "test hosts need root (network namespaces, tc): nothing measured"
  exit 0
fi
if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
  say "mpirun or mpicc (Open MPI) missing: scripts/deps.sh installs them; nothing measured"
  exit 0
fi
ipc=$(command -v ip || echo /usr/sbin/ip)
tcc=$(command -v tc || echo /usr/sbin/tc)
if ! [ -x "$ipc" ] || ! command -v unshare >/dev/null; then
  say "ip (iproute2) or unshare (util-linux) missing: scripts/deps.sh installs them; nothing measured"
  exit 0
fi

tmp=$(mktemp -d /tmp/bench-cluster.XXXXXX)
prefix=weftc$$
made=() # namespaces made, the switch last
exec 3>&2 4>&1 # the script's stderr and stdout, for cleanup: a signal
# can come while a command's output is redirected to a file
measured=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  exec 2>&3 1>&4
  if [ $measured = 0 ] && { [ -s "${raw:-/nonexistent}" ] || [ -s "${jobsraw:-/nonexistent}" ]; }; then
    say "stopped: the rounds measured so far"
    table
    jobtable
  fi
  # End what still runs inside the test hosts (only processes this run
  # started live there), then the namespaces, which takes their links,
  # the bridge and the qdiscs with them.
  local ns pids
  # What this script started in the background here (a build, a launch).
  pids=$(jobs -p)
  [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  for ns in "${made[@]}"; do
    pids=$("$ipc" netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  done
  for ns in "${made[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      pids=$("$ipc" netns pids "$ns" 2>/dev/null || true)
      [ -n "$pids" ] || break
      sleep 0.2
    done
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  done
  local n=0
  for ns in "${made[@]}"; do "$ipc" netns del "$ns" 2>/dev/null && n=$((n + 1)); done
  rm -rf "$tmp"
  # Open MPI's shared-memory segments are named after the host, and the
  # test hosts share this machine's /dev/shm: a rank killed above leaves
  # its segment there.
  rm -f /dev/shm/vader_segment."$prefix"-*
  say "removed $n namespaces (${made[*]:-none}) with their veth links, bridge and qdiscs, and $tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run CMD in the background and wait for it, so that a signal to this
# script is acted on at once, not when CMD ends.
bg() {
  "$@" &
  wait $!
}

# --- build ----------------------------------------------------------------
weft=${WEFT:-}
if [ -z "$weft" ]; then
  weft=$tmp/weft
  if pkg-config --exists ompi-c 2>/dev/null; then
    say "building weft with the mpi tag"
    bg go build -tags mpi -o "$weft" ./cmd/weft
  else
    say "no Open MPI headers (pkg-config ompi-c): building weft without its MPI backend, leaving weft-mpi out"
    bg go build -o "$weft" ./cmd/weft
    read -ra impls <<<"${impls[*]/weft-mpi/}"
  fi
fi
bg mpicc -O2 -o "$tmp/mpi_coll" scripts/peers/mpi_coll.c
for j in "${jobs[@]}"; do
  case $j in
  gnn)
    say "generating an SBM of ${GNN_NODES:-100000} nodes and its BGL partitions for JOBS=gnn"
    bg "$weft" gen sbm --nodes "${GNN_NODES:-100000}" -o "$tmp/graph.h5" >/dev/null 2>&1
    for l in "${layouts[@]}"; do
      k=$((${l%x*} * ${l#*x}))
      [ "$k" -gt 1 ] || continue
      bg "$weft" partition --algo bgl -k "$k" --name "bgl$k" --sample-seeds 1 --halo-hops -1 --force "$tmp/graph.h5" >/dev/null 2>&1
    done
    ;;
  mlp)
    [ -f "$mnist/train-images-idx3-ubyte.gz" ] || [ -f "$mnist/train-images-idx3-ubyte" ] || {
      say "no Fashion-MNIST in $mnist (scripts/deps.sh installs dataset-fashion-mnist): leaving JOBS=mlp out"
      read -ra jobs <<<"${jobs[*]/mlp/}"
    }
    ;;
  esac
done

# --- the test hosts -------------------------------------------------------
ipn() { "$ipc" "$@" >/dev/null; }
sw=$prefix-sw
hosts=()
if ! "$ipc" netns add "$sw" 2>"$tmp/err"; then
  say "this machine refuses network namespaces ($(cat "$tmp/err")): no test hosts, nothing measured; scripts/bench-vs-mpi.sh measures Weft beside Open MPI over loopback"
  exit 0
fi
made+=("$sw")
ipn -n "$sw" link set lo up
ipn -n "$sw" link add br0 type bridge
ipn -n "$sw" link set br0 up
for ((i = 0; i < nhosts; i++)); do
  h=$prefix-h$i
  ipn netns add "$h"
  made=("$h" "${made[@]}")
  hosts+=("$h")
  ipn -n "$h" link set lo up
  ipn -n "$h" link add eth0 type veth peer name p$i netns "$sw"
  ipn -n "$sw" link set p$i master br0
  ipn -n "$sw" link set p$i up
  ipn -n "$h" addr add 10.99.0.$((i + 1))/24 dev eth0
  ipn -n "$h" link set eth0 up
done
say "$nhosts test hosts (${hosts[*]}) on 10.99.0.0/24 behind bridge br0 in $sw"

# Open MPI's launch agent: "agent [options] HOST COMMAND..." runs COMMAND in
# HOST's namespaces with HOST as its host name, as ssh runs it on HOST.
cat >"$tmp/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
case \$host in
$prefix-h[0-9]*) ;;
*) echo "bench-cluster agent: \$host is not a test host of this run" >&2; exit 1 ;;
esac
exec "$ipc" netns exec "\$host" unshare --uts sh -c "hostname \$host && \$*"
EOF
chmod +x "$tmp/agent"

# inhost H CMD...: CMD inside test host H, with its host name, in a
# session of its own: mpirun, when signalled, signals its whole process
# group, which would otherwise be this script's.
inhost() {
  local h=$prefix-h$1
  shift
  setsid -w "$ipc" netns exec "$h" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

# --- link shapes ----------------------------------------------------------
netem=1
shape() { # RATE[:DELAY] on every link, both ends; "none" clears
  local rate=${1%%:*} delay="" i burst
  [[ $1 == *:* ]] && delay=${1#*:}
  for ((i = 0; i < nhosts; i++)); do
    "$tcc" -n "$prefix-h$i" qdisc del dev eth0 root 2>/dev/null || true
    "$tcc" -n "$sw" qdisc del dev p$i root 2>/dev/null || true
  done
  [ "$rate" = none ] && return 0
  # Bucket: a millisecond at the rate, at least two 64 KiB GSO packets
  # (a smaller one makes tbf cut them up). Queue at the host's end: 64 MiB,
  # as a host's own queue (pfifo_fast's 1000 packets of up to 64 KiB) holds
  # what TCP's small-queue limit lets a socket put there
  # (net.ipv4.tcp_limit_output_bytes, 4 MiB here) without dropping, so a
  # sender waits for its link as it would for a real NIC; with 2 ms there
  # (250 KB at 1 Gbit/s) bursts were dropped and a ring's allreduce ran at
  # a quarter of the rate. Queue at the switch's end: 2 ms at the rate, a
  # switch port's buffer, where only fan-in queues.
  local bps
  bps=$(numfmt --from=si "$(tr kmg KMG <<<"${rate%bit}")")
  burst=$((bps / 8 / 1000 > 131072 ? bps / 8 / 1000 : 131072))
  local tbf=(tbf rate "$rate" burst "$burst" limit 64mb) swtbf=(tbf rate "$rate" burst "$burst" latency 2ms)
  for ((i = 0; i < nhosts; i++)); do
    if [ -n "$delay" ] && [ $netem = 1 ] &&
      "$tcc" -n "$prefix-h$i" qdisc add dev eth0 root handle 1: netem delay "$delay" limit 100000 2>"$tmp/err"; then
      "$tcc" -n "$prefix-h$i" qdisc add dev eth0 parent 1:1 handle 10: "${tbf[@]}" 2>"$tmp/err" || return 1
    else
      if [ -n "$delay" ] && [ $netem = 1 ]; then
        netem=0
        say "tc netem refused ($(tr '\n' ' ' <"$tmp/err")): links get their rate but no added delay"
      fi
      "$tcc" -n "$prefix-h$i" qdisc add dev eth0 root "${tbf[@]}" 2>"$tmp/err" || return 1
    fi
    "$tcc" -n "$sw" qdisc add dev p$i root "${swtbf[@]}" 2>"$tmp/err" || return 1
  done
}

# weftp2p OP ARGS...: weft bench OP between hosts 0 and 1, one rank each,
# without mpirun; rank 0's CSV goes to $tmp/p2p.
port=29700
weftp2p() {
  local op=$1 job=p2p$RANDOM
  shift
  port=$((port + 1))
  local env=(env WEFT_WORLD_SIZE=2 WEFT_MASTER_ADDR=10.99.0.1 WEFT_MASTER_PORT=$port WEFT_JOB_ID=$job)
  inhost 1 "${env[@]}" WEFT_RANK=1 timeout 120 "$weft" bench "$op" "$@" >/dev/null 2>&1 &
  local p=$!
  inhost 0 "${env[@]}" WEFT_RANK=0 timeout 120 "$weft" bench "$op" "$@" --csv >"$tmp/p2p" 2>&1 &
  wait $! || true
  wait $p || true
}

# --- runs -----------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 \
  OMPI_MCA_plm_rsh_agent=$tmp/agent OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1
best_glibc=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.arena_max=1
mpirun_in0() { # layout, mpirun args...
  local l=$1 nh=${1%x*} nr=${1#*x} i
  shift
  : >"$tmp/hosts.$l"
  for ((i = 0; i < nh; i++)); do echo "$prefix-h$i slots=$nr" >>"$tmp/hosts.$l"; done
  inhost 0 timeout "$limit" mpirun --hostfile "$tmp/hosts.$l" -np $((nh * nr)) --bind-to none "$@"
}
szargs=(-b "$min" -e "$max" -f "$factor")
[ "$iters" = 0 ] || szargs+=(-n "$iters")
one() { # impl shape layout op: appends "impl shape layout op size busbw time wrong" lines
  local impl=$1 s=$2 l=$3 op=$4 rc=0
  port=$((port + 1))
  local wx=(-x WEFT_MASTER_ADDR=10.99.0.1 -x WEFT_MASTER_PORT=$port) k="$1 $2 $3 $4"
  local best=(-x GLIBC_TUNABLES=$best_glibc --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none
    --mca mpi_yield_when_idle 1 --mca btl_tcp_links "${OMPI_TCP_LINKS:-2}" ${OMPI_EXTRA:-})
  case $impl in
  weft) bg mpirun_in0 "$l" "${wx[@]}" "${weftenv[@]}" -x WEFT_BACKEND=tcp "$weft" bench "$op" "${szargs[@]}" --csv >"$tmp/out" 2>&1 || rc=$? ;;
  base) bg mpirun_in0 "$l" "${wx[@]}" "${baseenv[@]}" -x WEFT_BACKEND=tcp "$baseline" bench "$op" "${szargs[@]}" --csv >"$tmp/out" 2>&1 || rc=$? ;;
  weft-mpi) bg mpirun_in0 "$l" "${best[@]}" "${wx[@]}" -x WEFT_BACKEND=mpi "$weft" bench "$op" "${szargs[@]}" --csv >"$tmp/out" 2>&1 || rc=$? ;;
  ompi) bg mpirun_in0 "$l" "${best[@]}" "$tmp/mpi_coll" "$op" "$min" "$max" "$factor" "$iters" >"$tmp/out" 2>&1 || rc=$? ;;
  *) say "IMPLS: unknown $impl (want weft, weft-mpi, ompi)"; exit 2 ;;
  esac
  if [ $rc != 0 ]; then
    say "$k failed (exit $rc):"
    tail -5 "$tmp/out" >&2
  fi
  case $impl in
  weft* | base) awk -F, -v k="$k" '$8=="out-of-place" {print k, $3, $11, $9, $12}' "$tmp/out" ;;
  ompi) awk -F, -v k="$k" '$1 ~ /^mpi_/ {print k, $3, $6, $4, 0}' "$tmp/out" ;;
  esac
}

# onejob SHAPE LAYOUT JOB MODE: appends "shape layout job mode where
# samples/s" lines, where is "hosts" (across the test hosts) or "emulated"
# (one process, goroutine ranks, --net-gbps at the shape's rate).
onejob() {
  local s=$1 l=$2 j=$3 mode=$4 rc=0 k=$((${2%x*} * ${2#*x})) gbps
  gbps=$(numfmt --from=si "$(tr kmg KMG <<<"${s%%:*}" | sed 's/bit$//')" 2>/dev/null || echo 0)
  gbps=$(awk -v b="$gbps" 'BEGIN { printf "%g", b / 1e9 }')
  port=$((port + 1))
  local wx=(-x WEFT_MASTER_ADDR=10.99.0.1 -x WEFT_MASTER_PORT=$port -x WEFT_BACKEND=tcp) args parse
  case $j in
  gnn)
    args=(train gnn --data "$tmp/graph.h5" --partition "bgl$k" --pipeline "$mode" --epochs "${GNN_EPOCHS:-2}")
    parse='$1 ~ /^[0-9]+$/ && NF > 5 { v = $2 } END { print v }'
    ;;
  mlp)
    args=(train mlp --data "$mnist" --mode "$mode" --epochs 1 --limit "${MLP_LIMIT:-20000}" --every 0)
    parse='/^epoch/ { for (i = 2; i <= NF; i++) if ($i ~ /^samples\/s,?$/) v = $(i - 1) } END { print v }'
    ;;
  esac
  bg mpirun_in0 "$l" "${wx[@]}" "${weftenv[@]}" "$weft" "${args[@]}" >"$tmp/out" 2>&1 || rc=$?
  [ $rc = 0 ] || { say "$j $mode on $l failed (exit $rc):"; tail -5 "$tmp/out" >&2; }
  echo "$s $l $j $mode hosts $(awk "$parse" "$tmp/out")"
  rc=0
  if [ $j = gnn ]; then
    bg timeout "$limit" "$weft" "${args[@]}" --ranks "$k" --net-gbps "$gbps" >"$tmp/out" 2>&1 || rc=$?
  else
    bg timeout "$limit" "$weft" "${args[@]}" --local "$k" --net-gbps "$gbps" >"$tmp/out" 2>&1 || rc=$?
  fi
  [ $rc = 0 ] || { say "$j $mode in one process failed (exit $rc):"; tail -5 "$tmp/out" >&2; }
  echo "$s $l $j $mode emulated $(awk "$parse" "$tmp/out")"
}

jobtable() {
  [ -s "$jobsraw" ] || return 0
  echo
  echo "| shape | hosts x ranks | job | mode | samples/s across the test hosts | samples/s in one process, link emulated | hosts / one process |"
  echo "|---|---|---|---|---|---|---|"
  awk '
    function median(s,   a, n, i, j, t) {
      n = split(s, a, " "); if (n == 0) return -1
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $1 " " $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if ($6 != "") v[$5, k] = v[$5, k] " " $6 }
    END {
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, f, " ")
        h = median(v["hosts", k]); e = median(v["emulated", k])
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], h < 0 ? "-" : sprintf("%.0f", h),
          e < 0 ? "-" : sprintf("%.0f", e), (h < 0 || e <= 0) ? "-" : sprintf("%.2f", h / e)
      }
    }' "$jobsraw"
}

# --- table ----------------------------------------------------------------
# table prints what was measured: at the end, or when a signal stops the
# run (the rounds done so far).
table() {
  echo
  echo "Links (measured before the runs; netem delay $([ $netem = 1 ] && echo applied || echo "not available: rate only")):"
  echo
  echo "| shape | one TCP stream (MB/s) | share of the rate | half round trip, 8 B (us) |"
  echo "|---|---|---|---|"
  awk '{ r = $1; sub(/:.*/, "", r); bps = r; sub(/bit$/, "", bps); m = 1
    if (bps ~ /g$/) m = 1e9; else if (bps ~ /m$/) m = 1e6; else if (bps ~ /k$/) m = 1e3
    sub(/[kmg]$/, "", bps); share = (r == "none" || $2 == "?") ? "-" : sprintf("%.0f%%", 100 * $2 * 8e6 / (bps * m))
    printf "| %s | %s | %s | %s |\n", $1, $2, share, $3 }' "$links"
  [ -s "$raw" ] || return 0
  echo
  if [ -n "$baseline" ]; then
    echo "| shape | hosts x ranks | collective | size (B) | weft busbw | baseline busbw | weft-mpi busbw | Open MPI busbw | weft / baseline | weft / Open MPI | baseline / Open MPI | weft-mpi / Open MPI | weft / line rate | #wrong |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  else
    echo "| shape | hosts x ranks | collective | size (B) | weft busbw | weft-mpi busbw | Open MPI busbw | weft / Open MPI | weft-mpi / Open MPI | weft / line rate | #wrong |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  fi
  awk -v base="$baseline" '
    function median(s,   a, n, i, j, t) {
      n = split(s, a, " "); if (n == 0) return -1
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(v) { return v < 0 ? "-" : sprintf("%.3f", v) }
    function ratio(a, b) { return (a < 0 || b <= 0) ? "-" : sprintf("%.2f", a / b) }
    function gbs(shape,   r, m) { r = shape; sub(/:.*/, "", r); sub(/bit$/, "", r); m = 1
      if (r ~ /g$/) m = 1e9; else if (r ~ /m$/) m = 1e6; else if (r ~ /k$/) m = 1e3
      sub(/[kmg]$/, "", r); return (r + 0) * m / 8e9 }
    { k = $2 " " $3 " " $4 " " $5; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      bw[$1, k] = bw[$1, k] " " $6; if ($1 ~ /^weft/ || $1 == "base") wrong[k] += $8 }
    END {
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, f, " ")
        w = median(bw["weft", k]); m = median(bw["weft-mpi", k]); o = median(bw["ompi", k]); line = gbs(f[1])
        lr = (line > 0 && w >= 0) ? sprintf("%.0f%%", 100 * w / line) : "-"
        if (base != "") {
          b = median(bw["base", k])
          printf "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", f[1], f[2], f[3], f[4], fmt(w), fmt(b), fmt(m), fmt(o),
            ratio(w, b), ratio(w, o), ratio(b, o), ratio(m, o), lr, wrong[k]
        } else
          printf "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d |\n", f[1], f[2], f[3], f[4], fmt(w), fmt(m), fmt(o),
            ratio(w, o), ratio(m, o), lr, wrong[k]
      }
    }' "$raw"
}

raw=$tmp/raw
: >"$raw"
jobsraw=$tmp/jobs
: >"$jobsraw"
links=$tmp/links
: >"$links"
start=$SECONDS
for s in "${shapes[@]}"; do
  if ! shape "$s"; then
    say "tc refused to shape the links as $s ($(tr '\n' ' ' <"$tmp/err")): measuring them unshaped"
    shape none
    s=none
  fi
  [ $netem = 1 ] || s=${s%%:*} # the rows name the shape the links have
  # The link as shaped: one TCP stream's rate and half a round trip.
  weftp2p bandwidth -b 1M -e 1M -n 5 # windows of 64 MiB: 4 s at 1 Gbit/s
  bw=$(awk -F, '$1=="bandwidth" {print $6}' "$tmp/p2p")
  weftp2p latency -b 8 -e 8 -n 2000
  lat=$(awk -F, '$1=="latency" {print $5}' "$tmp/p2p")
  echo "$s ${bw:-?} ${lat:-?}" >>"$links"
  say "links $s: one TCP stream ${bw:-?} MB/s, half round trip ${lat:-?} us"
  for rep in $(seq "$reps"); do
    for l in "${layouts[@]}"; do
      for op in "${ops[@]}"; do
        for impl in "${impls[@]}"; do
          one "$impl" "$s" "$l" "$op" >>"$raw"
        done
      done
      for j in "${jobs[@]}"; do
        [ $((${l%x*} * ${l#*x})) -gt 1 ] || continue
        case $j in gnn) modes=(bgl baseline) ;; mlp) modes=(bsp sapipe) ;; esac
        for mode in "${modes[@]}"; do onejob "$s" "$l" "$j" "$mode" >>"$jobsraw"; done
      done
    done
    say "$s: round $rep of $reps done, $((SECONDS - start)) s"
  done
done

table
jobtable
measured=1
say "done in $((SECONDS - start)) s"
if [ -n "${HOLD:-}" ]; then say "HOLD: hosts kept until $HOLD exists"; while ! [ -e "$HOLD" ]; do sleep 1; done; fi
