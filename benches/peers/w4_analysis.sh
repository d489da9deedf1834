#!/usr/bin/env bash
# W4: `autograd-gen analyze` over PyTorch's corpus against torchgen's own analysis (Python, from
# the torch 2.15.0 wheel), whole processes, interleaved, median of N runs.
#
#   benches/peers/w4_analysis.sh [runs]      (from the repository root)
#
# Sets up torchgen in $TORCHREF (default /tmp/torchref) from the wheel if it is not there:
# `pip download --no-deps torch==2.15.0`, unzip torchgen/ only. No torch code is committed.
# Needs: python3 with pyyaml and typing_extensions; PyTorch's files in ../shared/pytorch.
set -euo pipefail
RUNS=${1:-11}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${AUTOGRAD_PYTORCH_DIR:-$ROOT/../shared/pytorch}
DATA=$(cd "$DATA" && pwd)
REF=${TORCHREF:-/tmp/torchref}
TARGET=${CARGO_TARGET_DIR:-/work/target-rt}
if [ ! -d "$REF/torchgen" ]; then
  mkdir -p "$REF"
  (cd "$REF" && pip download --no-deps torch==2.15.0 -d . >/dev/null && unzip -q -o torch-2.15.0-*.whl 'torchgen/*')
fi
# torchgen's analysis, writing the same records (schema, derivative info, saved variables,
# output differentiability) as `autograd-gen analyze --json`.
cat > "$REF/w4_torchgen.py" <<PY
import json, sys
sys.path.insert(0, "$REF")
from torchgen.packaged.autograd.load_derivatives import load_derivatives
from torchgen.api.autograd import match_differentiability_info
from torchgen.gen import parse_native_yaml
from torchgen.api import cpp
D = "$DATA/"
infos, _ = load_derivatives(D + "derivatives.yaml", D + "native_functions.yaml", D + "tags.yaml")
fns = parse_native_yaml(D + "native_functions.yaml", D + "tags.yaml").native_functions
res = match_differentiability_info(sorted(fns, key=lambda f: cpp.name(f.func)), infos)
out = []
for fn in res:
    rec = {"schema": str(fn.func.func)}
    if fn.info:
        info = next(iter(fn.info.values()))
        rec["info"] = {"name": info.name, "op": info.op,
            "args_with_derivatives": [a.name for a in info.args_with_derivatives],
            "derivatives": [{"var_names": list(d.var_names), "formula": d.formula,
                "saved_inputs": [s.nctype.name if isinstance(s.nctype.name, str) else str(s.nctype.name) for s in d.saved_inputs],
                "saved_outputs": [s.nctype.name if isinstance(s.nctype.name, str) else str(s.nctype.name) for s in d.saved_outputs]}
                for d in info.derivatives]}
    out.append(rec)
json.dump(out, open(sys.argv[1], "w"))
PY
(cd "$ROOT" && cargo build -q --release -p autograd-gen)
GEN="$TARGET/release/autograd-gen"
ours=(); theirs=()
now() { date +%s%N; }
for _ in $(seq "$RUNS"); do
  t=$(now); "$GEN" analyze --native "$DATA/native_functions.yaml" --derivatives "$DATA/derivatives.yaml" \
      --tags "$DATA/tags.yaml" --json > /tmp/w4_ours.json; ours+=($(( ($(now) - t) / 1000 )))
  t=$(now); python3 "$REF/w4_torchgen.py" /tmp/w4_torchgen.json; theirs+=($(( ($(now) - t) / 1000 )))
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mn() { printf '%s\n' "$@" | sort -n | head -1; }
mx() { printf '%s\n' "$@" | sort -n | tail -1; }
o=$(med "${ours[@]}"); p=$(med "${theirs[@]}")
echo "W4 analysis of PyTorch's derivatives.yaml + native_functions.yaml, whole processes, median of $RUNS interleaved runs"
printf '  autograd-gen analyze --json  %8.1f ms (min-max %.1f-%.1f)\n' "$(echo "$o/1000" | bc -l)" "$(echo "$(mn "${ours[@]}")/1000" | bc -l)" "$(echo "$(mx "${ours[@]}")/1000" | bc -l)"
printf '  torchgen (python3)           %8.1f ms (min-max %.1f-%.1f)\n' "$(echo "$p/1000" | bc -l)" "$(echo "$(mn "${theirs[@]}")/1000" | bc -l)" "$(echo "$(mx "${theirs[@]}")/1000" | bc -l)"
printf '  torchgen / ours              %8.1fx\n' "$(echo "$p/$o" | bc -l)"
printf '  records: ours %s, torchgen %s\n' "$(python3 -c 'import json,sys; print(len(json.load(open("/tmp/w4_ours.json"))))' 2>/dev/null || echo '?')" \
  "$(python3 -c 'import json; print(len(json.load(open("/tmp/w4_torchgen.json"))))')"
