#!/usr/bin/env bash
# SP-GNN through the tools (docs/BENCHMARKS.md, "SP-GNN"): weft encode
# stores the position and structure encodings and prints the awareness
# scores; weft train gnn then trains GraphSAGE (--model sage) and SP-GNN
# (--model spgnn, the encodings fetched with the features; --fuse all
# feeds both encodings to the layers, --fuse auto only those whose stored
# awareness gain is at least 0.01) with the same sampler, fanouts, batch
# and epochs, several seeds, on
#   sbm: a 10,000-node SBM, 5 blocks, homophily 0.6, weak features (noise 6);
#   fm:  the Fashion-MNIST 10-NN graph of the first 10,000 images.
# usage: scripts/bench-spgnn.sh [SEEDS] [EPOCHS]   (3 5)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3} epochs=${2:-5}
export WEFT_PROGRESS=0
make -s build
w=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$w"' EXIT
[ -f "$w/sbm10k.h5" ] || bin/weft gen sbm --nodes 10000 --blocks 5 --deg-in 6 --deg-out 4 --feat-dim 16 --noise 6 -o "$w/sbm10k.h5" 2>/dev/null
[ -f "$w/fm10k.h5" ] || bin/weft gen fmnist-knn --limit 10000 -o "$w/fm10k.h5" 2>/dev/null
for g in sbm10k fm10k; do
  echo "## $g: weft encode $g.h5"
  bin/weft encode --force "$w/$g.h5" 2>&1 | sed 's/^/    /'
done
echo
echo "| graph | seed | GraphSAGE test acc | SP-GNN, --fuse all | SP-GNN, --fuse auto |"
echo "|---|---:|---:|---:|---:|"
for g in sbm10k fm10k; do
  for s in $(seq "$seeds"); do
    line="| $g | $s |"
    for m in "sage all" "spgnn all" "spgnn auto"; do
      set -- $m
      a=$(bin/weft train gnn --data "$w/$g.h5" --ranks 1 --model "$1" --fuse "$2" --pipeline baseline --fanout 10,5 --batch 256 \
          --hidden 128 --dropout 0 --epochs "$epochs" --seed "$s" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF == 10 { t = $10 } END { print t }')
      line="$line $a |"
    done
    echo "$line"
  done
done
