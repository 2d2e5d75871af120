#!/usr/bin/env bash
# The bad-input catalog: every input kind (binary and text graphs, rule
# files, imports, pipelines, params, range tables, device profiles, flags)
# through every subcommand, as an attacker or a careless user would give
# them. Each case must end with its exit status (1 bad input, 2 bad usage),
# a message naming the file or flag, nothing created or changed in its
# folder, within 10 s and 1 GB of memory.
set -u
GRAFT="${TEST_SRCDIR}/graft/cli/graft"
ROOT="$PWD"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/catalog"
rm -rf "$WORK"
mkdir -p "$WORK/fixtures"
passed=0
failed=0

# ---- fixtures, copied into each case's folder ----
F="$WORK/fixtures"
cat > "$F/ok.pbtxt" <<'PB'
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "id" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "r" op: "Relu" input: "id" attr { key: "T" value { type: DT_FLOAT } } }
PB
"$GRAFT" convert "$F/ok.pbtxt" "$F/ok.pb" 2>/dev/null
cat > "$F/ok.graft" <<'RULE'
# Identity(x) => x
rule bypass {
  match {
    id = Identity(x)
  }
  rewrite {
    replace id with x
  }
}
RULE
cat > "$F/grow.graft" <<'RULE'
# Relu(x) => a copy of itself, for ever
rule grow {
  match {
    s = Relu(_)
  }
  rewrite {
    clone s as s2
    control s -> s2
  }
}
RULE
cat > "$F/fails.graft" <<'RULE'
# a rule that stops the apply
rule stop {
  match {
    r = Relu(_)
  }
  rewrite {
    fail "cannot rewrite {r}"
  }
}
RULE
python3 - "$F" <<'PY'
import sys
f = sys.argv[1]
def w(name, text): open(f + "/" + name, "w").write(text)
rule = lambda where: "rule a {\n  match { c = Relu(_) where " + where + " }\n  rewrite { erase c }\n}\n"
w("parens.graft", rule("(" * 10000 + "true" + ")" * 10000))
w("nots.graft", rule("not " * 100000 + "true"))
w("chain.graft", rule("uses(c) == 1" + " + 1" * 100000))
w("nested.graft", "rule a {\n  match { c = " + "Relu(" * 5000 + "_" + ")" * 5000 + " }\n  rewrite { erase c }\n}\n")
w("longop.graft", "rule a {\n  match { c = R" + "x" * (1 << 20) + "(_) }\n  rewrite { erase c }\n}\n")
w("deep.pbtxt", "node { name: \"a\" op: \"Const\" attr { key: \"value\" value { " + "list { func { name: \"f\" attr { key: \"k\" value { " * 100000 + "}" * 500000 + " } } }\n")
PY
printf 'node { name: "x" op: "Placeholder" input: "\\307" }\n' > "$F/utf8.pbtxt"
printf 'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\\000\\000\\200?" } } } }\n' > "$F/short.pbtxt"
printf 'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: -3 } } float_val: 1 } } } }\n' > "$F/negdim.pbtxt"
printf 'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } } float_val: 1 } } } }\n' > "$F/dtype.pbtxt"
printf 'node { name: "a" op: "Relu" input: "b" attr { key: "T" value { type: DT_FLOAT } } }\nnode { name: "b" op: "Relu" input: "a" attr { key: "T" value { type: DT_FLOAT } } }\n' > "$F/cycle.pbtxt"
printf 'node { name: "a" op: "Relu" input: "missing" }\n' > "$F/dangling.pbtxt"
head -c 40 "$F/ok.pb" > "$F/truncated.pb"
printf '\xff\xfe\x00garbage\x01\x02' > "$F/garbage.pb"
cp "$F/ok.pbtxt" "$F/text_named.pb"
: > "$F/empty.pb"
cp "$ROOT/examples/keras_cnn.pb" "$F/model.pb"
printf 'rule a {\n  match { c = Relu(_) where name_matches(c, "m[") }\n  rewrite { erase c }\n}\n' > "$F/regex.graft"
printf 'rule a {\n  match { c = Relu(_) where usez(c) == 1 }\n  rewrite { erase c }\n}\n' > "$F/unknown_fn.graft"
printf 'rule a {\n  match { c = Relu(_) where uses(q) == 1 }\n  rewrite { erase c }\n}\n' > "$F/unbound.graft"
printf 'rule a {\n  match { c = Relu(_)\n' > "$F/syntax.graft"
printf 'import "/dev/zero"\n' > "$F/import_dev.graft"
printf 'import "."\n' > "$F/import_dir.graft"
printf 'import "nope.graft"\n' > "$F/import_missing.graft"
printf 'param scale: float = 1.0 in 0..2\nrule a {\n  match { c = Relu(_) where scale > 0 }\n  rewrite { erase c }\n}\n' > "$F/param.graft"
printf 'param ranges: ranges = ""\nrule a {\n  match { c = Relu(_) where range_min(ranges, c, 0) == 0 }\n  rewrite { erase c }\n}\n' > "$F/ranges.graft"
printf 'param pre: graph = ""\nrule a {\n  match { c = Relu(_) where check_preprocessing(pre) }\n  rewrite { erase c }\n}\n' > "$F/graphparam.graft"
printf 'x: [1, 2\n' > "$F/bad.yaml"
printf 'steps:\n  - rulez: ok.graft\n' > "$F/unknown_key.yaml"
printf 'steps:\n  - rules: ok.graft\n    params: {colour: red}\n' > "$F/undeclared.yaml"
printf 'steps:\n  - rules: nope.graft\n' > "$F/missing_rules.yaml"
printf 'steps:\n  - rules: param.graft\n' > "$F/param_step.yaml"
printf 'r:0: [1\n' > "$F/ranges_garbage.yaml"
mkdir -p "$F/norules"
python3 -c "
import sys
n = 'node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2147483648 } dim { size: 2147483648 } } float_val: 1 } } } }\n'
n += 'node { name: \"r\" op: \"Relu\" input: \"c\" attr { key: \"T\" value { type: DT_FLOAT } } }\n'
open('$F/huge.pbtxt', 'w').write(n)
r = 'rule a {\n  match { r = Relu(c: Const) }\n  rewrite {\n    replace r with Const(rsqrt(c))\n  }\n}\n'
open('$F/fold_huge.graft', 'w').write(r)
"

# an ONNX MatMul by a [32, 2] weight, one of whose values is NaN in nan_weight
for name in mm nan_weight; do
  python3 - "$F/$name.onnxtxt" "$name" <<'PY'
import sys
values = ["0.5"] * 64
if sys.argv[2] == "nan_weight":
    values[7] = "nan"
tensor = lambda dims: "".join(" dim { dim_value: %d }" % d for d in dims)
open(sys.argv[1], "w").write(
    'ir_version: 8\nopset_import { domain: "" version: 17 }\ngraph {\n'
    '  node { input: "x" input: "w" output: "y" name: "mm" op_type: "MatMul" }\n'
    '  name: "g"\n'
    '  initializer { dims: 32 dims: 2 data_type: 1 name: "w" %s }\n'
    '  input { name: "x" type { tensor_type { elem_type: 1 shape {%s } } } }\n'
    '  output { name: "y" type { tensor_type { elem_type: 1 shape {%s } } } }\n}\n'
    % (" ".join("float_data: " + v for v in values), tensor([1, 32]), tensor([1, 2])))
PY
done

printf 'steps:\n  - pipeline: self.yaml\n' > "$F/self.yaml"
printf 'steps:\n  - pipeline: self.yaml\n    rules: ok.graft\n' > "$F/both.yaml"

snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum 2>/dev/null) }

# case_ NAME WANT_RC PATTERN -- COMMAND... runs COMMAND in a fresh copy of
# the fixtures; case_writes NAME WANT_RC PATTERN FILE -- COMMAND... is the
# same for a command that may write FILE (and nothing else).
case_writes() {
  local allowed="$4"
  set -- "$1" "$2" "$3" "${@:5}"
  ALLOWED="$allowed" case_ "$@"
}

case_() {
  local name="$1" want_rc="$2" pattern="$3"
  local allowed="${ALLOWED:-}"
  shift 4
  local dir="$WORK/cases/$name"
  mkdir -p "$dir"
  cp -r "$F/." "$dir/"
  local before
  before="$(snapshot "$dir")"
  local start end
  start=$(date +%s%N)
  (cd "$dir" && ulimit -v 4194304 && /usr/bin/time -f "%M" -o "$WORK/rss" timeout 10 "$@") >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  local rss_kb
  rss_kb=$(tail -1 "$WORK/rss" 2>/dev/null | grep -o '^[0-9]*$' || echo 0)
  local why=""
  if [[ $rc -ne $want_rc ]]; then why="exit $rc, want $want_rc"; fi
  if [[ -z $why ]] && ! grep -qE -- "$pattern" "$WORK/err"; then why="stderr does not match /$pattern/"; fi
  if [[ -n $allowed ]]; then rm -f "$dir/$allowed"; fi
  if [[ -z $why ]] && [[ "$(snapshot "$dir")" != "$before" ]]; then why="files created or changed"; fi
  if [[ -z $why && $ms -gt 10000 ]]; then why="took ${ms} ms"; fi
  if [[ -z $why && ${rss_kb:-0} -gt 1048576 ]]; then why="peak RSS ${rss_kb} KB"; fi
  if [[ -n $why ]]; then
    echo "FAIL $name: $why"; head -c 600 "$WORK/err"; echo
    failed=$((failed + 1))
  else
    echo "ok   $name (${ms} ms, $((${rss_kb:-0} / 1024)) MB)"
    passed=$((passed + 1))
  fi
  rm -rf "$dir"
}

# ---- graph files ----
case_ stats_missing 1 "nope.pb: error: no such file" -- "$GRAFT" stats nope.pb
case_ stats_folder 1 "norules: error: is a directory" -- "$GRAFT" stats norules
case_ stats_dev_zero 1 "/dev/zero: error: is not a regular file" -- "$GRAFT" stats /dev/zero
case_ stats_empty 1 "empty.pb: error: is empty" -- "$GRAFT" stats empty.pb
case_ stats_garbage 1 "garbage.pb(:[0-9]+)*: error" -- "$GRAFT" stats garbage.pb
case_ stats_text_named_pb 1 "text_named.pb.*looks like a text GraphDef" -- "$GRAFT" stats text_named.pb
case_ stats_truncated 1 "truncated.pb.*error" -- "$GRAFT" stats truncated.pb
case_ stats_deep_text 1 "deep.pbtxt:1:[0-9]+: error: .*recursion limit of 100" -- "$GRAFT" stats deep.pbtxt
case_ stats_not_utf8 1 "utf8.pbtxt: error: node 0: .* is not valid UTF-8" -- "$GRAFT" stats utf8.pbtxt
case_ validate_short_content 1 "short.pbtxt: error: Const .c. holds 4 bytes" -- "$GRAFT" validate short.pbtxt
case_ validate_negative_dim 1 "negdim.pbtxt: error: Const .c. has a negative dimension" -- "$GRAFT" validate negdim.pbtxt
case_ validate_const_dtype 1 "dtype.pbtxt: error: Const .c. has dtype int32 but its value is float32" -- "$GRAFT" validate dtype.pbtxt
case_ validate_cycle 1 "cycle.pbtxt: error: .*cycle" -- "$GRAFT" validate cycle.pbtxt
case_ validate_dangling 1 "dangling.pbtxt: error: input 0 of .a. names .missing." -- "$GRAFT" validate dangling.pbtxt
case_ validate_empty 1 "empty.pb: error: is empty" -- "$GRAFT" validate empty.pb
case_ validate_bad_format 2 "--format" -- "$GRAFT" validate --format caffe ok.pb
case_ convert_missing 1 "nope.pbtxt: error: no such file" -- "$GRAFT" convert nope.pbtxt out.pb
case_ convert_onto_input 2 "refusing to overwrite the input" -- "$GRAFT" convert ok.pb ok.pb
case_ convert_into_missing_folder 1 "nowhere/out.pb" -- "$GRAFT" convert ok.pb nowhere/out.pb
case_ convert_garbage 1 "garbage.pb" -- "$GRAFT" convert garbage.pb out.pbtxt
case_ diff_missing 1 "nope.pb: error: no such file" -- "$GRAFT" diff ok.pb nope.pb
case_ diff_bad_format 2 "--format" -- "$GRAFT" diff --format svg ok.pb ok.pbtxt
case_ diff_negative_context 2 "--context" -- "$GRAFT" diff --format html --context -1 ok.pb ok.pbtxt
case_ mem_garbage 1 "garbage.pb" -- "$GRAFT" mem garbage.pb
case_ mem_cycle 1 "cycle.pbtxt: error: .*cycle" -- "$GRAFT" mem cycle.pbtxt
case_ mem_negative_top 2 "--top" -- "$GRAFT" mem --top -1 ok.pb
case_ cost_unknown_device 1 "no device profile .tpu." -- "$GRAFT" cost --device tpu ok.pb
case_ cost_device_dev_zero 1 "/dev/zero: error: is not a regular file" -- "$GRAFT" cost --device /dev/zero ok.pb
case_ cost_negative_top 2 "--top" -- "$GRAFT" cost --top -5 ok.pb
case_ explain_no_node 1 "ok.pb: error: no node .nope." -- "$GRAFT" explain -r ok.graft ok.pb --node nope
case_ explain_no_rule 1 "no rule .nope." -- "$GRAFT" explain -r ok.graft ok.pb --rule nope

# ---- rule files and imports ----
case_ check_missing 1 "nope.graft: error: cannot read the rule file" -- "$GRAFT" check nope.graft
case_ check_folder 1 "norules: error: is a directory" -- "$GRAFT" check norules
case_ check_dev_zero 1 "/dev/zero: error: is not a regular file" -- "$GRAFT" check /dev/zero
case_ check_binary_graph 1 "model.pb:[0-9]+:[0-9]+: error" -- "$GRAFT" check model.pb
case_ check_syntax 1 "syntax.graft:[0-9]+:[0-9]+: error" -- "$GRAFT" check syntax.graft
case_ check_deep_parens 1 "parens.graft:2:[0-9]+: error: nested more than 256 levels deep" -- "$GRAFT" check parens.graft
case_ check_many_nots 1 "nots.graft:2:[0-9]+: error: more than 256 prefix operators" -- "$GRAFT" check nots.graft
case_ check_long_chain 1 "chain.graft:2:[0-9]+: error: an expression nested more than 500 levels" -- "$GRAFT" check chain.graft
case_ check_deep_pattern 1 "nested.graft:2:[0-9]+: error: nested more than 256" -- "$GRAFT" check nested.graft
case_ check_long_unknown_op 1 "longop.graft:2:[0-9]+: error: unknown op" -- "$GRAFT" check longop.graft
case_ check_unknown_function 1 "unknown_fn.graft:2:[0-9]+: error: unknown function .usez." -- "$GRAFT" check unknown_fn.graft
case_ check_unbound_name 1 "unbound.graft:2:[0-9]+: error: unknown name .q." -- "$GRAFT" check unbound.graft
case_ check_bad_regex 1 "regex.graft:2:[0-9]+: error: bad regex" -- "$GRAFT" check regex.graft
case_ import_dev_zero 1 "import_dev.graft:1:1: error: cannot import ./dev/zero.: is not a regular file" -- "$GRAFT" check import_dev.graft
case_ import_folder 1 "import_dir.graft:1:1: error: cannot import" -- "$GRAFT" check import_dir.graft
case_ import_missing 1 "import_missing.graft:1:1: error: cannot import .nope.graft." -- "$GRAFT" check import_missing.graft
case_ fmt_missing 1 "nope.graft" -- "$GRAFT" fmt --check nope.graft
case_ test_no_rule_files 1 "no rule files found" -- "$GRAFT" test norules

# ---- pipelines, params, tables ----
case_ pipeline_missing 1 "nope.yaml: error: no such file" -- "$GRAFT" apply --pipeline nope.yaml ok.pb -o out.pb
case_ pipeline_dev_zero 1 "/dev/zero: error: is not a regular file" -- "$GRAFT" apply --pipeline /dev/zero ok.pb -o out.pb
case_ pipeline_bad_yaml 1 "bad.yaml:[0-9]+:[0-9]+: error" -- "$GRAFT" apply --pipeline bad.yaml ok.pb -o out.pb
case_ pipeline_unknown_key 1 "unknown_key.yaml:2:5: error: unknown key .rulez." -- "$GRAFT" apply --pipeline unknown_key.yaml ok.pb -o out.pb
case_ pipeline_undeclared_param 1 "undeclared.yaml:3:14: error: param .colour. is not declared" -- "$GRAFT" apply --pipeline undeclared.yaml ok.pb -o out.pb
case_ pipeline_includes_itself 1 "self.yaml:2:15: error: pipelines nest at most 8 deep \(does one include itself\?\)" -- "$GRAFT" apply --pipeline self.yaml ok.pb -o out.pb
case_ pipeline_step_with_pipeline_and_rules 1 "both.yaml:2:15: error: a .pipeline. step names one pipeline file, alone" -- "$GRAFT" apply --pipeline both.yaml ok.pb -o out.pb
case_ pipeline_missing_rules 1 "nope.graft: error: cannot read the rule file" -- "$GRAFT" apply --pipeline missing_rules.yaml ok.pb -o out.pb
case_ param_without_value 2 "--param: error: expected name=value" -- "$GRAFT" apply -r param.graft --param scale ok.pb -o out.pb
case_ param_unknown 2 "unknown param .colour." -- "$GRAFT" apply -r param.graft --param colour=red ok.pb -o out.pb
case_ pipeline_param_typo 2 "note: did you mean .scale." -- "$GRAFT" apply --pipeline param_step.yaml --param scal=1 ok.pb -o out.pb
case_ param_wrong_type 2 "param .scale.: .big. is not a float" -- "$GRAFT" apply -r param.graft --param scale=big ok.pb -o out.pb
case_ param_out_of_range 2 "param .scale.: 5 is outside 0..2" -- "$GRAFT" apply -r param.graft --param scale=5 ok.pb -o out.pb
case_ ranges_missing 1 "nope.yaml: error: cannot read the range file" -- "$GRAFT" apply -r ranges.graft --param ranges=nope.yaml ok.pb -o out.pb
case_ ranges_dev_zero 1 "/dev/zero: error: cannot read the range file: is not a regular file" -- "$GRAFT" apply -r ranges.graft --param ranges=/dev/zero ok.pb -o out.pb
case_ ranges_garbage 1 "ranges_garbage.yaml:[0-9]+:[0-9]+: error" -- "$GRAFT" apply -r ranges.graft --param ranges=ranges_garbage.yaml ok.pb -o out.pb
case_ graph_param_missing 1 "nope.pbtxt: error: cannot load the graph" -- "$GRAFT" apply -r graphparam.graft --param pre=nope.pbtxt ok.pb -o out.pb

# ---- flags and output paths ----
case_ unknown_subcommand 2 "frobnicate" -- "$GRAFT" frobnicate
case_ apply_without_output 2 "--output is required" -- "$GRAFT" apply -r ok.graft ok.pb
case_ apply_rules_and_pipeline 2 "give one of rule files .-r., a pipeline .--pipeline., --transforms or --onnxoptimizer-passes, not several" -- "$GRAFT" apply -r ok.graft --pipeline p.yaml ok.pb -o out.pb
case_ apply_no_rules 2 "no rules: give rule files .-r FILE., a pipeline .--pipeline FILE., GTT transforms .--transforms STRING. or onnxoptimizer passes" -- "$GRAFT" apply ok.pb -o out.pb
case_ apply_rule_file_as_model 2 "ok.graft. is a rule file, not a model: give each rule file its own -r" -- "$GRAFT" apply -r ok.graft ok.graft ok.pb -o out.pb
case_ apply_unknown_transform 2 "unknown transform .fold_bacth_norms. \(column 16\); known: .*fold_batch_norms" -- "$GRAFT" apply --transforms "fold_constants fold_bacth_norms" ok.pb -o out.pb
case_ apply_unknown_onnxoptimizer_pass 2 "unknown pass .fuse_everything. \(column 20\); known: .*eliminate_identity" -- "$GRAFT" apply --onnxoptimizer-passes "eliminate_identity,fuse_everything" ok.pb -o out.pb
case_ apply_bad_onnxoptimizer_pass_list 2 "--onnxoptimizer-passes:1:1: error: .fuse bn. is not a pass name" -- "$GRAFT" apply --onnxoptimizer-passes "fuse bn" ok.pb -o out.pb
case_ apply_transforms_syntax 2 "--transforms:1:26: error: a quoted value is not closed" -- "$GRAFT" apply --transforms "remove_nodes(op=\"Identity" ok.pb -o out.pb
case_ apply_transform_param 2 "transform .remove_nodes. has no param .ops.; its params: inputs, max_inputs, op, outputs" -- "$GRAFT" apply --transforms "remove_nodes(ops=Identity)" ok.pb -o out.pb
case_ pipeline_unknown_transform 2 "unknown transform .nope." -- "$GRAFT" pipeline --from-transforms "nope" -o p2.yaml
case_ review_no_head 2 "give --head rule files or --head-pipeline .neither was given." -- "$GRAFT" review --base ok.graft ok.pb
case_ review_drift_no_after 2 "give both --before and --after" -- "$GRAFT" review -r ok.graft --before .
case_ review_drift_and_models 2 "--before/--after review one rule set" -- "$GRAFT" review -r ok.graft --before . --after . ok.pb
case_ apply_negative_max_rewrites 2 "--max-rewrites: Value -1 not in range" -- "$GRAFT" apply -r ok.graft --max-rewrites -1 ok.pb -o out.pb
case_ apply_huge_max_rewrites 2 "--max-rewrites" -- "$GRAFT" apply -r ok.graft --max-rewrites 99999999999999999999 ok.pb -o out.pb
case_ apply_zero_const_elements 2 "--max-const-elements" -- "$GRAFT" apply -r ok.graft --max-const-elements 0 ok.pb -o out.pb
case_ apply_onto_input 2 "refusing to overwrite the input" -- "$GRAFT" apply -r ok.graft ok.pb -o ok.pb
case_ apply_report_missing_folder 1 "nowhere/r.json: error: cannot write here" -- "$GRAFT" apply -r ok.graft ok.pb -o out.pb --report nowhere/r.json
case_ apply_report_is_folder 1 "norules: error: is a directory" -- "$GRAFT" apply -r ok.graft ok.pb -o out.pb --report norules
case_ apply_empty_graph 1 "empty.pb: error: is empty" -- "$GRAFT" apply -r ok.graft empty.pb -o out.pb

# ---- runaway and failing rules ----
case_ runaway_rule 1 "ok.pb: error: .*did not converge: no fixpoint after 1030 rewrites; still firing: .grow." -- "$GRAFT" apply -r grow.graft ok.pb -o out.pb
case_ runaway_rule_pipeline_report 1 "did not converge" -- "$GRAFT" apply -r grow.graft ok.pb -o out.pb --report r.json
case_ fail_action 1 "rule .stop. failed at .r.: fails.graft:7: cannot rewrite r" -- "$GRAFT" apply -r fails.graft ok.pb -o out.pb

# ---- bad input that is not an error: the work goes on, the rest reported ----
case_writes huge_constant_skipped 0 "skipped a at .r.: .*has [0-9]+ elements; rules compute on constants of at most 67108864" out.pb -- "$GRAFT" apply -r fold_huge.graft huge.pbtxt -o out.pb
NBITS="$ROOT/rules/onnx/quantize_nbits.graft"
case_ nbits_bits_outside 2 "param .bits.: 2 is outside 4..8" -- "$GRAFT" apply -r "$NBITS" --param bits=2 mm.onnxtxt -o out.onnx
case_ nbits_bits_not_taken 1 "quantize_nbits.graft:[0-9]+: .require bits == 4 or bits == 8. does not hold" -- "$GRAFT" apply -r "$NBITS" --param bits=5 mm.onnxtxt -o out.onnx
case_ nbits_block_not_taken 1 "quantize_nbits.graft:[0-9]+: .require block_size == 16 or" -- "$GRAFT" apply -r "$NBITS" --param block_size=48 mm.onnxtxt -o out.onnx
case_ nbits_qdq_below_opset_21 1 "rule .nbits_qdq_opset. failed at .mm.: .*from opset 21 on" -- "$GRAFT" apply -r "$NBITS" --param format=qdq mm.onnxtxt -o out.onnx
case_ nbits_qdq_eight_bits 1 "quantize_nbits.graft:[0-9]+: .require format == .operator. or bits == 4. does not hold" -- "$GRAFT" apply -r "$NBITS" --param format=qdq --param bits=8 mm.onnxtxt -o out.onnx
case_ opset_past_newest 1 "error: opset 99 is past the newest graft knows" -- "$GRAFT" apply --opset 99 -r "$NBITS" mm.onnxtxt -o out.onnx
case_ opset_of_a_tensorflow_graph 1 "a tensorflow graph imports no opset to raise" -- "$GRAFT" apply --opset 21 -r ok.graft ok.pb -o out.pb
case_writes nbits_nan_weight_stays_float 0 "skipped nbits_matmul at .mm.: .*not finite \(inf or NaN\): it stays float" out.onnx -- "$GRAFT" apply -r "$NBITS" nan_weight.onnxtxt -o out.onnx
case_writes outputs_flag_before_input 0 "1 rewrite" out.pb -- "$GRAFT" apply -r ok.graft --outputs r ok.pb -o out.pb

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
