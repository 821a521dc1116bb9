#!/usr/bin/env bash
# weft train gnn, measured side by side in one run (docs/BENCHMARKS.md):
#   1. single process, one thread: Weft's GraphSAGE (sampling included)
#      against scripts/peers/torch_sage.py, same model, fanouts, batch,
#      sampling (each seed's pair alternating; medians of the runs and of
#      the pairs' ratios);
#   2. the BGL pipeline (BGL partition, proximity order, FIFO cache,
#      isolated stages) against the baseline (random partition, shuffled
#      batches, no cache, stages one after another), 4 ranks, on the
#      Fashion-MNIST k-NN graph, a 1M-node SBM graph and a 1M-node
#      geometric k-NN graph (weft gen geo), on the host's
#      own speed and on an emulated link of $GBPS Gbit/s per rank
#      (--net-gbps: every sampling, feature and gradient round ends no
#      earlier than such a card would have carried its bytes);
#   3. cache policies over budgets: BGL's FIFO + proximity order against
#      the static degree cache (PaGraph) with shuffled batches, and the
#      hybrid (the static cache of the halo in front of a FIFO);
#   4. accuracy: GraphSAGE on the Fashion-MNIST k-NN graph (with and
#      without the label trick) against MLPs on the same pixels: the same
#      trainer's (--model mlp) and weft train mlp's, several seeds; then on an
#      SBM (4b), and with 10 labelled images of each class (4c);
#   5. accuracy: the BGL pipeline against the baseline, several seeds.
# usage: scripts/bench-gnn.sh [SEEDS] [BIG_NODES]   (3 1000000)
# SECTIONS=245 runs only those sections; GBPS ("2") lists the emulated
# links of section 2, GRAPHS ("fm big geo") its graphs.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3} big=${2:-1000000}
sections=${SECTIONS:-12345} gbps=${GBPS:-2} graphs=${GRAPHS:-fm big geo}
on() { [[ $sections == *$1* ]]; }
export WEFT_PROGRESS=0
make -s build
w=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$w"' EXIT

# mean samples/s over epochs, and the last test accuracy, of a weft train gnn table
summ() { awk '$1 ~ /^[0-9]+$/ && NF == 10 { s += $2; n++; t = $10 } END { printf "%.0f %s\n", s / n, t }'; }

if on 1; then
echo "## 1. one process, one thread: Weft against PyTorch (SBM 100k nodes)"
[ -f "$w/sbm.h5" ] || bin/weft gen sbm --nodes 100000 --blocks 10 --deg-in 12 --deg-out 8 --feat-dim 32 --noise 4 -o "$w/sbm.h5" 2>/dev/null
echo "| run | weft nodes/s | weft test acc | torch nodes/s | torch sampling | torch test acc | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|"
: > "$w/s1"
for s in $(seq "$seeds"); do
  read -r wn wa < <(GOMAXPROCS=1 bin/weft train gnn --data "$w/sbm.h5" --ranks 1 --pipeline baseline \
      --fanout 10,5 --batch 512 --hidden 128 --epochs 2 --seed "$s" 2>/dev/null | summ)
  tl=$(/usr/bin/python3 scripts/peers/torch_sage.py "$w/sbm.h5" --fanout 10,5 --batch 512 --hidden 128 --epochs 2 --threads 1 --seed "$s")
  tn=$(sed 's/^nodes_per_s=\([0-9]*\).*/\1/' <<<"$tl"); ta=$(sed 's/.*test_acc=\([0-9.]*\).*/\1/' <<<"$tl")
  tsh=$(sed 's/.*seconds=\([0-9.]*\) sampling_s=\([0-9.]*\).*/\2 \1/' <<<"$tl" | awk '{ printf "%.0f%%", 100 * $1 / $2 }')
  echo "$wn $tn" >> "$w/s1"
  awk -v s="$s" -v wn="$wn" -v wa="$wa" -v tn="$tn" -v ta="$ta" -v sh="$tsh" 'BEGIN { printf "| seed %s | %d | %s | %d | %s | %.2f%% | %.2fx |\n", s, wn, wa, tn, sh, 100 * ta, wn / tn }'
done
med() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
awk '{ print $1 }' "$w/s1" | med > "$w/s1w"; awk '{ print $2 }' "$w/s1" | med > "$w/s1t"; awk '{ print $1 / $2 }' "$w/s1" | med > "$w/s1r"
echo "| median | $(cat "$w/s1w") | | $(cat "$w/s1t") | | | $(awk '{ printf "%.2fx", $1 }' "$w/s1r") (of the pairs) |"
# The same work timed in CPU seconds, a second view on a shared machine
# (other jobs' memory traffic still moves it): the process's user + system time over
# its second and third epochs (training, then the valid and test accuracy,
# as weft train gnn does after each epoch; the first epoch holds start-up).
# cpu_at EPOCHPATTERN CMD...: the process's CPU seconds at each epoch line.
cpu_at() {
  local pat=$1 line tck; shift
  tck=$(getconf CLK_TCK)
  coproc CPU_RUN { exec "$@" 2>/dev/null; }
  local pid=$CPU_RUN_PID fd=${CPU_RUN[0]}
  while IFS= read -r line <&"$fd"; do
    [[ $line =~ $pat ]] && awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / t }' "/proc/$pid/stat"
  done
  wait "$pid" || true
}
echo
echo "CPU seconds for epochs 2 and 3 (training + valid and test accuracy), 4 epochs:"
echo "| run | weft cpu s | torch cpu s | torch / weft |"
echo "|---|---:|---:|---:|"
: > "$w/s1c"
for s in $(seq "$seeds"); do
  wc=$(cpu_at '^ +[0-9]+ ' env GOMAXPROCS=1 bin/weft train gnn --data "$w/sbm.h5" --ranks 1 --pipeline baseline \
      --fanout 10,5 --batch 512 --hidden 128 --epochs 4 --seed "$s" | sed -n '1p;3p' | paste -sd' ' | awk '{ print $2 - $1 }')
  tc=$(cpu_at '^epoch=' /usr/bin/python3 scripts/peers/torch_sage.py "$w/sbm.h5" --fanout 10,5 --batch 512 --hidden 128 \
      --epochs 4 --threads 1 --seed "$s" --eval-each-epoch | sed -n '1p;3p' | paste -sd' ' | awk '{ print $2 - $1 }')
  echo "$wc $tc" >> "$w/s1c"
  awk -v s="$s" -v a="$wc" -v b="$tc" 'BEGIN { printf "| seed %s | %.2f | %.2f | %.2fx |\n", s, a, b, b / a }'
done
echo "| median | $(awk '{ print $1 }' "$w/s1c" | med) | $(awk '{ print $2 }' "$w/s1c" | med) | $(awk '{ print $2 / $1 }' "$w/s1c" | med | awk '{ printf "%.2fx", $1 }') (of the pairs) |"
fi

[ -f "$w/fm.h5" ] || bin/weft gen fmnist-knn -o "$w/fm.h5" 2>/dev/null
# partitions for sections 2, 3 and 5; the 1M-node graph only for 2 and 3
parts=
on 2 || on 3 || on 5 && parts=fm
for g in big geo; do
  (on 2 && [[ $graphs == *$g* ]]) || on 3 && parts="$parts $g"
done
for g in $parts; do
  [ "$g" = big ] && [ ! -f "$w/big.h5" ] && bin/weft gen sbm --nodes "$big" --blocks 20 --deg-in 8 --deg-out 2 --feat-dim 64 --noise 4 -o "$w/big.h5" 2>/dev/null
  [ "$g" = geo ] && [ ! -f "$w/geo.h5" ] && bin/weft gen geo --nodes "$big" --classes 20 --k 10 --feat-dim 64 --noise 4 -o "$w/geo.h5" 2>/dev/null
  for a in bgl random; do
    bin/weft partition --algo "$a" -k 4 --halo-hops -1 --force "$w/$g.h5" >/dev/null 2>&1
  done
done
# row: mean samples/s of epochs after the first, the last epoch's busy times,
# cache hit, remote bytes and test accuracy of a weft train gnn table
row() { awk '$1 ~ /^[0-9]+$/ && NF == 10 { if ($1 > 0) { s += $2; k++ } else f = $2; a = $3; b = $4; c = $5; h = $6; r = $7; t = $10 }
        END { if (k == 0) { s = f; k = 1 } printf "%.0f %s %s %s %s %s %s\n", s / k, a, b, c, h, r, t }'; }

if on 2; then
echo
echo "## 2. BGL pipeline against the baseline, 4 ranks in one process (fm 3 epochs, big 2; samples/s over the epochs after the first)"
echo "| graph | link | pipeline | samples/s | sample busy | fetch busy | train busy | cache hit | remote bytes | test acc | bgl/baseline |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for g in $graphs; do
  ep=2; [ "$g" = fm ] && ep=3
  for link in 0 $gbps; do
    base=
    for p in baseline bgl; do
      part=random; [ "$p" = bgl ] && part=bgl
      read -r sps a b c h r t < <(bin/weft train gnn --data "$w/$g.h5" --ranks 4 --partition "$part" --pipeline "$p" \
          --fanout 10,5 --batch 1024 --hidden 128 --epochs "$ep" --cache 20% --net-gbps "$link" 2>/dev/null | row)
      ratio=; [ "$p" = bgl ] && ratio=$(awk -v x="$sps" -v y="$base" 'BEGIN { printf "%.2fx", x / y }')
      base=$sps
      lk=host; [ "$link" != 0 ] && lk="$link Gbit/s"
      echo "| $g | $lk | $p | $sps | $a | $b | $c | $h | $r | $t | $ratio |"
    done
  done
done
fi

if on 3; then
echo
echo "## 3. cache policies over budgets, BGL partition, 4 ranks, 2 epochs (hit ratio of the second)"
echo "| graph | budget | static + shuffle | fifo + proximity | static + proximity | hybrid + proximity |"
echo "|---|---:|---:|---:|---:|---:|"
for g in fm big geo; do
  budgets="2% 5% 10% 20%"; [ "$g" = big ] && budgets="5% 20%"; [ "$g" = geo ] && budgets="1% 2% 5% 20%"
  for bud in $budgets; do
    line="| $g | $bud |"
    for c in "static shuffle" "fifo proximity" "static proximity" "hybrid proximity"; do
      set -- $c
      h=$(bin/weft train gnn --data "$w/$g.h5" --ranks 4 --partition bgl --cache-policy "$1" --order "$2" --fanout 10,5 \
          --batch 1024 --epochs 2 --cache "$bud" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF == 10 { h = $6 } END { print h }')
      line="$line $h |"
    done
    echo "$line"
  done
done
fi

if on 4; then
echo
echo "## 4. accuracy on Fashion-MNIST: GraphSAGE on the k-NN graph against MLPs on the pixels (5 epochs, 1 rank)"
echo "| seed | GraphSAGE | GraphSAGE --use-labels | MLP, same trainer (--model mlp) | MLP, weft train mlp |"
echo "|---|---:|---:|---:|---:|"
for s in $(seq "$seeds"); do
  line="| $s |"
  for m in "sage" "sage --use-labels" "mlp"; do
    a=$(bin/weft train gnn --data "$w/fm.h5" --ranks 1 --pipeline baseline --fanout 10,5 --batch 256 --hidden 256 --dropout 0 \
        --epochs 5 --seed "$s" --model $m 2>/dev/null | row | cut -d' ' -f7)
    line="$line $a |"
  done
  ma=$(bin/weft train mlp --local 1 --epochs 5 --seed "$s" 2>/dev/null | awk '/final test accuracy/ { printf "%.2f%%", 100 * $4 }')
  echo "$line $ma |"
done
echo
echo "## 4b. the label trick where the graph knows the classes: SBM 10k nodes, weak features, 10 epochs, 1 rank"
[ -f "$w/sbm10k.h5" ] || bin/weft gen sbm --nodes 10000 --blocks 5 --deg-in 6 --deg-out 4 --feat-dim 16 --noise 6 -o "$w/sbm10k.h5" 2>/dev/null
echo "| seed | GraphSAGE | GraphSAGE --use-labels | MLP (--model mlp) | MLP --use-labels |"
echo "|---|---:|---:|---:|---:|"
for s in $(seq "$seeds"); do
  line="| $s |"
  for m in "sage" "sage --use-labels" "mlp" "mlp --use-labels"; do
    a=$(bin/weft train gnn --data "$w/sbm10k.h5" --ranks 1 --pipeline baseline --fanout 10,5 --batch 256 --hidden 128 \
        --epochs 10 --seed "$s" --model $m 2>/dev/null | row | cut -d' ' -f7)
    line="$line $a |"
  done
  echo "$line"
done
echo
echo "## 4c. few labels: the same graph, 10 training images of each class (gen --train-per-class 10), 60 epochs, 1 rank"
[ -f "$w/fm-l10.h5" ] || bin/weft gen fmnist-knn --train-per-class 10 -o "$w/fm-l10.h5" 2>/dev/null
echo "| seed | GraphSAGE | MLP, same trainer (--model mlp) |"
echo "|---|---:|---:|"
for s in $(seq "$seeds"); do
  line="| $s |"
  for m in sage mlp; do
    a=$(bin/weft train gnn --data "$w/fm-l10.h5" --ranks 1 --pipeline baseline --fanout 10,5 --batch 256 --hidden 256 --dropout 0 \
        --epochs 60 --seed "$s" --model $m 2>/dev/null | row | cut -d' ' -f7)
    line="$line $a |"
  done
  echo "$line"
done
fi

if on 5; then
echo
echo "## 5. accuracy: BGL pipeline against the baseline, Fashion-MNIST k-NN graph, 4 ranks, 3 epochs"
echo "| seed | baseline test acc | bgl test acc |"
echo "|---|---:|---:|"
for s in $(seq "$seeds"); do
  line="| $s |"
  for p in baseline bgl; do
    part=random; [ "$p" = bgl ] && part=bgl
    t=$(bin/weft train gnn --data "$w/fm.h5" --ranks 4 --partition "$part" --pipeline "$p" --fanout 10,5 --batch 1024 \
        --epochs 3 --seed "$s" 2>/dev/null | row | cut -d' ' -f7)
    line="$line $t |"
  done
  echo "$line"
done
fi
