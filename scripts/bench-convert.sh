#!/usr/bin/env bash
# weft convert against a numpy + h5py script doing the same job
# (scripts/peers/convert_numpy.py), side by side in one run: a text edge
# list of EDGES random edges over NODES nodes is converted into the HDF5
# layout by both, alternating, REPS times each; the table gives the median
# wall time, CPU time (user + system: Weft's parse, CSR build and
# compression run on every core, numpy's on one) and peak resident memory
# (GNU time) of each and their ratios.
#
# usage: scripts/bench-convert.sh [EDGES] [NODES] [REPS]   (10000000 1000000 3)
set -euo pipefail
cd "$(dirname "$0")/.."
edges=${1:-10000000} nodes=${2:-1000000} reps=${3:-3}
[ -x /usr/bin/time ] || { echo "bench-convert: needs GNU time (apt-get install time)" >&2; exit 1; }
/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null || { echo "bench-convert: needs python3-h5py and python3-numpy" >&2; exit 1; }
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "generating $edges random edges over $nodes nodes..." >&2
awk -v e="$edges" -v n="$nodes" 'BEGIN { srand(7); print "# random edge list for bench-convert"; for (i = 0; i < e; i++) printf "%d %d\n", int(rand() * n), int(rand() * n) }' > "$work/edges.txt"
size=$(stat -c %s "$work/edges.txt")

run() { # name command...: appends "seconds maxrss_kib cpu_seconds" to $work/$name
  local name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  awk '{ $3 = $3 + $4; NF = 3; print }' "$work/t" > "$work/t3" && mv "$work/t3" "$work/t"
  cat "$work/t" >> "$work/$name"
}
for _ in $(seq "$reps"); do
  run weft env WEFT_PROGRESS=0 bin/weft convert --force "$work/edges.txt" -o "$work/weft.h5"
  run numpy /usr/bin/python3 scripts/peers/convert_numpy.py "$work/edges.txt" "$work/numpy.h5"
done
# The two files must hold the same graph.
h5diff -c "$work/weft.h5" "$work/numpy.h5" /graph/indptr && h5diff "$work/weft.h5" "$work/numpy.h5" /graph/indices \
  || { echo "bench-convert: the two outputs differ" >&2; exit 1; }

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
wt=$(awk '{print $1}' "$work/weft" | median); wm=$(awk '{print $2}' "$work/weft" | median); wc=$(awk '{print $3}' "$work/weft" | median)
nt=$(awk '{print $1}' "$work/numpy" | median); nm=$(awk '{print $2}' "$work/numpy" | median); nc=$(awk '{print $3}' "$work/numpy" | median)
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| tool | edges | input | time (s, median of $reps) | CPU s (user + sys) | peak RSS (MiB) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
awk -v e="$edges" -v s="$size" -v t="$wt" -v c="$wc" -v m="$wm" 'BEGIN { printf "| weft convert | %d | %.0f MB | %.2f | %.2f | %.0f |\n", e, s/1e6, t, c, m/1024 }'
awk -v e="$edges" -v s="$size" -v t="$nt" -v c="$nc" -v m="$nm" 'BEGIN { printf "| numpy + h5py | %d | %.0f MB | %.2f | %.2f | %.0f |\n", e, s/1e6, t, c, m/1024 }'
awk -v a="$wt" -v b="$nt" -v c="$wm" -v d="$nm" -v x="$wc" -v y="$nc" 'BEGIN { printf "| **ratio** | | | %.2fx faster | %.2fx the CPU | %.2fx the memory |\n", b/a, x/y, c/d }'
