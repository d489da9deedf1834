#!/bin/sh
# Time per training step of the digits network (batch 64: forward, cross entropy, backward,
# Adam step), interleaved: ndtensor (f32), candletensor (f64) and PyTorch (eager, CPU, one
# thread, float32), ROUNDS rounds of N timed steps each after N warm-up steps.
#
#   sh benches/digits/run.sh [ROUNDS] [N]      (from the repository's root; defaults 5 200)
#
# Needs PyTorch in ~/.cache/torch (tools/pytorch_fixtures/README.md). Prints each run's
# line, then the median of the rounds' medians per backend and the ratios to PyTorch.
set -eu
ROUNDS=${1:-5}
N=${2:-200}
PY=${PYTHON:-$HOME/.cache/torch/bin/python}
cargo build --release -q -p ndtensor --example train_digits
cargo build --release -q -p candletensor --example train_digits_candle
TARGET=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
OUT=$(mktemp)
i=1
while [ "$i" -le "$ROUNDS" ]; do
    RAYON_NUM_THREADS=1 "$TARGET/release/examples/train_digits" --bench "$N" | tee -a "$OUT"
    RAYON_NUM_THREADS=1 "$TARGET/release/examples/train_digits_candle" --bench "$N" | tee -a "$OUT"
    "$PY" benches/digits/torch_digits.py --bench "$N" | tee -a "$OUT"
    i=$((i + 1))
done
awk '{ m[$1] = m[$1] " " $4 }
     END {
       for (k in m) {
         n = split(substr(m[k], 2), v, " "); 
         for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
         med[k] = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
       }
       for (k in med) printf "%-13s median of %d rounds: %8.1f us/step  (%.2fx PyTorch)\n", k, n, med[k], med[k] / med["pytorch"]
     }' "$OUT"
rm -f "$OUT"
