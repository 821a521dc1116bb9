#!/usr/bin/env bash
# weft train gnn, measured side by side in one run (docs/BENCHMARKS.md):
#   1. single process, one thread: Weft's GraphSAGE (sampling included)
#      against scripts/peers/torch_sage.py, same model, fanouts, batch;
#   2. the BGL pipeline (BGL partition, proximity order, FIFO cache,
#      isolated stages) against the baseline (random partition, shuffled
#      batches, no cache, stages one after another), 4 ranks, on the
#      Fashion-MNIST k-NN graph and on a 1M-node SBM graph;
#   3. cache policies at one budget: BGL's FIFO + proximity order against
#      the static degree cache;
#   4. accuracy: GraphSAGE on the Fashion-MNIST k-NN graph against an MLP
#      on the same pixels (weft train mlp), several seeds.
# usage: scripts/bench-gnn.sh [SEEDS] [BIG_NODES]   (3 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3} big=${2:-1000000}
export WEFT_PROGRESS=0
make -s build
w=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$w"' EXIT

# mean samples/s over epochs, and the last test accuracy, of a weft train gnn table
summ() { awk '$1 ~ /^[0-9]+$/ && NF == 10 { s += $2; n++; t = $10 } END { printf "%.0f %s\n", s / n, t }'; }

echo "## 1. one process, one thread: Weft against PyTorch (SBM 100k nodes)"
[ -f "$w/sbm.h5" ] || bin/weft gen sbm --nodes 100000 --blocks 10 --deg-in 12 --deg-out 8 --feat-dim 32 --noise 4 -o "$w/sbm.h5" 2>/dev/null
echo "| run | weft nodes/s | weft test acc | torch nodes/s | torch test acc | ratio |"
echo "|---|---:|---:|---:|---:|---:|"
for s in $(seq "$seeds"); do
  read -r wn wa < <(GOMAXPROCS=1 bin/weft train gnn --data "$w/sbm.h5" --ranks 1 --pipeline baseline \
      --fanout 10,5 --batch 512 --hidden 128 --epochs 2 --seed "$s" 2>/dev/null | summ)
  tl=$(/usr/bin/python3 scripts/peers/torch_sage.py "$w/sbm.h5" --fanout 10,5 --batch 512 --hidden 128 --epochs 2 --threads 1 --seed "$s")
  tn=$(sed 's/^nodes_per_s=\([0-9]*\).*/\1/' <<<"$tl"); ta=$(sed 's/.*test_acc=\([0-9.]*\).*/\1/' <<<"$tl")
  awk -v s="$s" -v wn="$wn" -v wa="$wa" -v tn="$tn" -v ta="$ta" 'BEGIN { printf "| seed %s | %d | %s | %d | %.2f%% | %.2fx |\n", s, wn, wa, tn, 100 * ta, wn / tn }'
done

echo
echo "## 2. BGL pipeline against the baseline, 4 ranks in one process"
[ -f "$w/fm.h5" ] || bin/weft gen fmnist-knn -o "$w/fm.h5" 2>/dev/null
[ -f "$w/big.h5" ] || bin/weft gen sbm --nodes "$big" --blocks 20 --deg-in 8 --deg-out 2 --feat-dim 64 --noise 4 -o "$w/big.h5" 2>/dev/null
for g in fm big; do
  for a in bgl random; do
    bin/weft partition --algo "$a" -k 4 --halo-hops -1 --force "$w/$g.h5" >/dev/null 2>&1
  done
done
echo "| graph | pipeline | samples/s | sample busy | fetch busy | train busy | cache hit | remote bytes | test acc |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for g in fm big; do
  for p in baseline bgl; do
    part=random; [ "$p" = bgl ] && part=bgl
    bin/weft train gnn --data "$w/$g.h5" --ranks 4 --partition "$part" --pipeline "$p" --fanout 10,5 --batch 1024 \
        --hidden 128 --epochs 3 --cache 20% 2>/dev/null \
      | awk -v g="$g" -v p="$p" '$1 ~ /^[0-9]+$/ && NF == 10 && $1 > 0 { s += $2; n++; a = $3; b = $4; c = $5; h = $6; r = $7; t = $10 }
          END { printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", g, p, s / n, a, b, c, h, r, t }'
  done
done

echo
echo "## 3. cache policies, BGL partition, 4 ranks, 5% budget"
echo "| graph | policy + order | cache hit | remote bytes | samples/s |"
echo "|---|---|---:|---:|---:|"
for g in fm big; do
  for c in "static shuffle" "static proximity" "fifo shuffle" "fifo proximity"; do
    set -- $c
    bin/weft train gnn --data "$w/$g.h5" --ranks 4 --partition bgl --cache-policy "$1" --order "$2" --fanout 10,5 \
        --batch 1024 --epochs 2 --cache 5% 2>/dev/null \
      | awk -v g="$g" -v c="$1 + $2" '$1 ~ /^[0-9]+$/ && NF == 10 { h = $6; r = $7; s = $2 } END { printf "| %s | %s | %s | %s | %.0f |\n", g, c, h, r, s }'
  done
done

echo
echo "## 4. accuracy on Fashion-MNIST: GraphSAGE on the k-NN graph against an MLP on the pixels"
echo "| seed | GraphSAGE test acc (5 epochs, 1 rank) | MLP test acc (5 epochs) |"
echo "|---|---:|---:|"
for s in $(seq "$seeds"); do
  sa=$(bin/weft train gnn --data "$w/fm.h5" --ranks 1 --fanout 10,5 --batch 512 --epochs 5 --seed "$s" 2>/dev/null | summ | cut -d' ' -f2)
  ma=$(bin/weft train mlp --local 1 --epochs 5 --seed "$s" 2>/dev/null | grep -oE 'test (acc|accuracy)[^0-9]*[0-9.]+%?' | tail -1 | grep -oE '[0-9.]+%?$')
  echo "| $s | $sa | $ma |"
done
