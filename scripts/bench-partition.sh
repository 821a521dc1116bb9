#!/usr/bin/env bash
# Issue 5's partitioner benchmark: BGL, METIS and random side by side
# (weft partition --compare) on R-MAT (symmetrised, edge factor 16), an SBM
# and the Fashion-MNIST 10-NN graphs of 20,000 images (--limit 10000) and
# of all 70,000, k = 4 and 8, 10% training nodes
# (--train-fraction 0.1, also on graphs with a train split), fanouts
# 15,10,5, batch 1000, 3 sampled epochs. Then each algorithm once more in
# a fresh process under GNU time, for the process-wide peak RSS (graph and
# metrics included, so compare the differences).
#
# usage: scripts/bench-partition.sh [RMAT_SCALE] [SBM_NODES] [WORKDIR]   (20 100000 tmp)
# Graphs are generated into WORKDIR once and reused when present.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-20} sbmn=${2:-100000} work=${3:-}
[ -x /usr/bin/time ] || { echo "bench-partition: needs GNU time (apt-get install time)" >&2; exit 1; }
make -s build
if [ -z "$work" ]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
export WEFT_PROGRESS=0
gen() { # file args...
  local f=$1; shift
  [ -f "$f" ] || { echo "generating $f..." >&2; bin/weft gen "$@" -o "$f" 2>/dev/null; }
}
gen "$work/rmat$scale.h5" rmat --scale "$scale" --undirected
gen "$work/sbm$sbmn.h5" sbm --nodes "$sbmn"
gen "$work/fm20k.h5" fmnist-knn --limit 10000
gen "$work/fmnist.h5" fmnist-knn
for f in "$work/rmat$scale.h5" "$work/sbm$sbmn.h5" "$work/fm20k.h5" "$work/fmnist.h5"; do
  for k in 4 8; do
    echo
    echo "#### $(basename "$f" .h5), k = $k"
    echo
    bin/weft partition --compare -k "$k" --train-fraction 0.1 --force "$f" 2>/dev/null
    line="| process peak RSS (MiB, fresh process) |"
    for algo in bgl metis random; do
      /usr/bin/time -f %M -o "$work/rss" bin/weft partition --algo "$algo" -k "$k" --train-fraction 0.1 \
        --force --name "rss-$algo" --sample-seeds 1 --halo-hops -1 "$f" >/dev/null 2>&1
      line="$line $algo $(awk '{ printf "%.0f", $1 / 1024 }' "$work/rss") |"
    done
    echo
    echo "$line"
  done
done
