#!/usr/bin/env bash
# Fuzzes graft with libFuzzer (clang-14, ASan, UBSan): the binary and text
# graph loaders, the rule compiler, the shipped rule libraries applied to
# fuzzed graphs, and the training-graph analyses and planners (fuzz/). Each
# target starts from the repository's own inputs; whatever crashes, leaks,
# runs over 1 s or over 2 GB is written to fuzz/regressions/<target>/, which
# `scripts/test.sh` replays from then on.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   (default 60, all eight)
#   FUZZ_RUNS=1000000 scripts/fuzz.sh 1800 load_text    # stop after N runs
#
# SECONDS is fuzzing time: libFuzzer first runs every input of the target's
# corpus (.fuzz/corpus/<target>, growing from run to run), which is not
# counted, so the `seconds` column (wall time) can be several times larger.
#
# Prints, per target: executions, coverage, peak RSS, wall seconds, new
# artifacts.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --no-python --fuzz || exit 1

seconds="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(load_binary load_text compile_rules apply_libraries apply_onnx_libraries analyze_training
           tensor_bundle load_saved_model load_onnx load_onnx_text resolve_model_files)
fi
declare -A seeds=(
  [load_binary]="examples tests/data"
  [load_text]="tests/golden tests/data"
  [compile_rules]="rules tests/golden examples"
  [apply_libraries]="tests/golden tests/data/tf_producers"
  [apply_onnx_libraries]="tests/data/onnx"
  [analyze_training]="tests/golden tests/data"
  [tensor_bundle]="fuzz/seeds/tensor_bundle"
  [resolve_model_files]="fuzz/seeds/resolve_model_files"
  [load_saved_model]="fuzz/seeds/load_saved_model"
  [load_onnx]="tests/data/onnx"
  [load_onnx_text]="tests/data/onnx"
)
declare -A extensions=(
  [load_binary]="pb"
  [load_text]="pbtxt"
  [compile_rules]="graft"
  [apply_libraries]="pbtxt"
  [apply_onnx_libraries]="onnxtxt"
  [analyze_training]="pbtxt pb"
  [tensor_bundle]="index"
  [resolve_model_files]="tree"
  [load_saved_model]="pb"
  [load_onnx]="onnx"
  [load_onnx_text]="onnxtxt"
)
# The training graphs the tests export are 130-160 KB (binary).
declare -A max_len=([analyze_training]=262144 [load_saved_model]=131072)
# Seconds one input may take: a hang, not a slow input, is what this
# catches. The largest rule library (62 KB, ONNX attention) compiles in
# 0.05 s in the release build and 1.1-1.4 s in this sanitized -O1 one.
declare -A timeout=([compile_rules]=5)

bazel_fuzz=(bazel --output_base="${HOME}/.cache/graft-bazel-fuzz")
labels=()
for t in "${targets[@]}"; do labels+=("//fuzz:$t"); done
"${bazel_fuzz[@]}" build --config=fuzz "${labels[@]}" || exit 1
bin="$("${bazel_fuzz[@]}" info --config=fuzz bazel-bin 2>/dev/null)/fuzz"

dirty=""
if ! git diff --quiet HEAD -- . 2>/dev/null; then dirty=" (with uncommitted changes)"; fi
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty, ${seconds} s per target"
printf '%-16s %12s %8s %8s %9s %8s %s\n' target executions exec/s coverage peak_rss seconds artifacts
status=0
for t in "${targets[@]}"; do
  corpus=".fuzz/corpus/$t"
  mkdir -p "$corpus" "fuzz/regressions/$t"
  for dir in ${seeds[$t]}; do
    for ext in ${extensions[$t]}; do
      while IFS= read -r f; do
        cp -n "$f" "$corpus/seed_${f//\//_}"
      done < <(find "$dir" -type f -name "*.$ext" -size -1024k)
    done
  done
  before=$(ls "fuzz/regressions/$t" | wc -l)
  dict=()
  if [[ $t == compile_rules ]]; then dict=(-dict=fuzz/graft.dict); fi
  log=".fuzz/$t.log"
  start=$(date +%s)
  "$bin/$t" "$corpus" "fuzz/regressions/$t" "${dict[@]}" \
    -max_total_time="$seconds" -runs="${FUZZ_RUNS:--1}" \
    -timeout="${timeout[$t]:-1}" -rss_limit_mb=2048 -max_len="${max_len[$t]:-65536}" \
    -print_final_stats=1 -artifact_prefix="fuzz/regressions/$t/" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  after=$(ls "fuzz/regressions/$t" | wc -l)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  printf '%-16s %12s %8s %8s %7sMB %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${rss:-?}" "$elapsed" "$((after - before)) new"
  if ((rc != 0 || after != before)); then
    status=1
    echo "  $t: see $log; new inputs in fuzz/regressions/$t/"
  fi
done
exit $status
