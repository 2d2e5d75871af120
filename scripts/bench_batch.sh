#!/usr/bin/env bash
# Batch apply benchmark: 200 small models (the golden inputs under distinct
# names) and 20 larger ones (4,000 nodes each), folded by rules/tf/fold_batch_norms.graft with --jobs 1, --jobs 2,
# and a shell loop of single applies. Prints seconds, models/s, the ratios,
# and the batch's overhead per model beyond the models' own apply times.
#
#   scripts/bench_batch.sh            (numbers in docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build -c opt //cli:graft >/dev/null 2>&1
GRAFT="$(pwd)/bazel-bin/cli/graft"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/zoo/small" "$work/zoo/large"
smalls=(tests/golden/*/in.pbtxt)
for i in $(seq 0 199); do
  cp "${smalls[$((i % ${#smalls[@]}))]}" "$work/zoo/small/m$i.pbtxt"
done
# A large model: 400 renamed copies of a conv + batch norm + relu block
# (4,000 nodes, 400 folds), written 20 times.
python3 - "$work/zoo/large" <<'PY'
import re, sys
block = open("tests/golden/fold_bn_conv/in.pbtxt").read()
names = re.compile(r'(name|input): "(\^?)([^"]+)"')
text = "".join(names.sub(lambda m: '%s: "%sb%d/%s"' % (m.group(1), m.group(2), i, m.group(3)), block)
               for i in range(400))
for i in range(20):
    open("%s/m%d.pbtxt" % (sys.argv[1], i), "w").write(text)
PY
models=$(find "$work/zoo" -type f | wc -l)
calc() { python3 -c "print($1)"; }
run() {  # label, command...: seconds
  local label="$1"; shift
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  calc "$end - $start"
}
t1=$(run jobs1 "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$work/zoo" -o "$work/out1" --jobs 1 --report "$work/r1.json")
t2=$(run jobs2 "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$work/zoo" -o "$work/out2" --jobs 2)
loop() {
  for f in $(find "$work/zoo" -type f | sort); do
    "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$f" -o "$work/out3/$(basename "$f")" || true
  done
}
mkdir -p "$work/out3"
t3=$(run loop loop)
# The models' own time (load, apply, save) as the batch report has it.
own=$(python3 -c "
import json; r = json.load(open('$work/r1.json'))
print(sum(m.get('ms', 0) for m in r['models']) / 1000)")
printf "%d models (200 small, 20 larger)\n" "$models"
printf "%-28s %8.2f s  %7.1f models/s\n" "graft apply --jobs 1" "$t1" "$(calc "$models / $t1")"
printf "%-28s %8.2f s  %7.1f models/s\n" "graft apply --jobs 2" "$t2" "$(calc "$models / $t2")"
printf "%-28s %8.2f s  %7.1f models/s\n" "a shell loop of applies" "$t3" "$(calc "$models / $t3")"
printf "jobs 2 vs jobs 1: %.2fx; jobs 1 vs the loop: %.2fx\n" "$(calc "$t1 / $t2")" "$(calc "$t3 / $t1")"
printf "batch overhead per model beyond its own load+apply+save: %.3f ms\n" "$(calc "($t1 - $own) * 1000 / $models")"
