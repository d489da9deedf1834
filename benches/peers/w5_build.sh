#!/usr/bin/env bash
# W5: clean `cargo build --release` of the example library (ndtensor, with autograd_ops! and
# its dependencies) against a crate depending on candle-core and one depending on burn
# (ndarray + autodiff), each in its own fresh target dir, one after the other.
#
#   benches/peers/w5_build.sh        (from the repository root; sources already downloaded)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${W5_DIR:-/tmp/w5}
rm -rf "$WORK" && mkdir -p "$WORK"
mk() { # name, dependency line
  mkdir -p "$WORK/$1/src" && echo 'fn main() {}' > "$WORK/$1/src/main.rs"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2024"\n[workspace]\n[dependencies]\n%s\n' "$1" "$2" > "$WORK/$1/Cargo.toml"
  # Same dependency versions as the bench crate.
  cp "$ROOT/benches/peers/Cargo.lock" "$WORK/$1/" 2>/dev/null || true
}
mk with-ndtensor "ndtensor = { path = \"$ROOT/examples/ndtensor\" }"
mk with-candle 'candle-core = "0.11"'
mk with-burn 'burn = { version = "0.22", default-features = false, features = ["std", "ndarray", "autodiff"] }'
echo "W5 clean release builds, $(nproc) cores, $(rustc --version)"
for c in with-ndtensor with-candle with-burn; do
  (cd "$WORK/$c" && cargo fetch -q)
  t=$(date +%s.%N)
  (cd "$WORK/$c" && CARGO_TARGET_DIR="$WORK/target-$c" cargo build -q --release)
  printf '  %-14s %6.1f s  (%s crates)\n' "$c" "$(echo "$(date +%s.%N) - $t" | bc -l)" \
    "$(ls "$WORK/target-$c/release/deps/"*.rlib "$WORK/target-$c/release/deps/"*.so 2>/dev/null | wc -l)"
done
