#!/usr/bin/env bash
# Weft's nn against PyTorch (Debian's python3-torch, CPU) on the same
# models, batch and thread count, side by side in one run:
#  1. a training step alone on a fixed batch (nn's BenchmarkMLPStep /
#     BenchmarkCNNStep against scripts/peers/torch_mlp.py step), REPS
#     times each, alternating; the table gives medians;
#  2. EPOCHS epochs of Fashion-MNIST, one process each (weft train
#     --local 1 --mode bsp against torch_mlp.py train): the whole loop's
#     samples/s and the test accuracy.
# BLAS threads are pinned for both (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,
# torch.set_num_threads).
#
# usage: scripts/bench-nn.sh [THREADS] [MODEL] [REPS] [EPOCHS]   (1 mlp 3 5)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-1} model=${2:-mlp} reps=${3:-3} epochs=${4:-5}
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "bench-nn: needs PyTorch: apt-get install -y python3-torch (large; only for this comparison)" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
bench=BenchmarkMLPStep
[ "$model" = cnn ] && bench=BenchmarkCNNStep
go test -c -o /tmp/weft-nn.test ./nn
make -s build
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
: > /tmp/bench-nn.weft; : > /tmp/bench-nn.torch
for _ in $(seq "$reps"); do
  /tmp/weft-nn.test -test.run '^$' -test.bench "^$bench\$" -test.benchtime 300x -test.cpu "$threads" |
    awk '/samples\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "samples/s") print $i }' >> /tmp/bench-nn.weft
  /usr/bin/python3 scripts/peers/torch_mlp.py step --model "$model" --threads "$threads" --steps 300 |
    sed 's/.*samples_per_s=\([0-9]*\).*/\1/' >> /tmp/bench-nn.torch
done
w=$(median < /tmp/bench-nn.weft) t=$(median < /tmp/bench-nn.torch)
echo "# training step, $model, batch 128, $threads thread(s), median of $reps; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %12s\n" peer "samples/s"
printf "%-8s %12.0f\n" weft "$w" torch "$t"
awk -v w="$w" -v t="$t" 'BEGIN { printf "weft/torch %.2fx\n", w / t }'
# Each weft run and the torch run after it share the machine's load of
# the moment: their ratios, pair by pair, drift less than the medians.
paste /tmp/bench-nn.weft /tmp/bench-nn.torch | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 } END { print "" }' |
  { read -r r; m=$(tr ' ' '\n' <<< "$r" | median); echo "weft/torch by pair: $r (median ${m}x)"; }
if [ "$epochs" -gt 0 ]; then
  echo "# $epochs epochs of Fashion-MNIST, $model, batch 128, SGD lr 0.05 momentum 0.9, $threads thread(s)"
  bin/weft train "$model" --local 1 --threads "$threads" --mode bsp --epochs "$epochs" --every 0 |
    awk '/^epoch/ { last = $0 } /^final/ { print "weft:", last; print "weft:", $0 }'
  /usr/bin/python3 scripts/peers/torch_mlp.py train --model "$model" --threads "$threads" --epochs "$epochs"
fi
