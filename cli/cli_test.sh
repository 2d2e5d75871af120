#!/usr/bin/env bash
# End-to-end checks of the `graft` command: exit codes, messages on stderr,
# and that failed commands write nothing.
set -u
GRAFT="${TEST_SRCDIR}/graft/cli/graft"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
EXAMPLE="examples/keras_cnn.pb"
passed=0
failed=0

# expect NAME WANT_RC STDERR_PATTERN -- COMMAND...
expect() {
  local name="$1" want_rc="$2" pattern="$3"
  shift 4
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, want $want_rc"; cat "$TMP/err"; failed=$((failed + 1)); return
  fi
  if [[ -n "$pattern" ]] && ! grep -qE -- "$pattern" "$TMP/err"; then
    echo "FAIL $name: stderr does not match /$pattern/:"; cat "$TMP/err"; failed=$((failed + 1)); return
  fi
  echo "ok   $name"
  passed=$((passed + 1))
}

# check NAME CONDITION...
check() {
  local name="$1"; shift
  if "$@"; then echo "ok   $name"; passed=$((passed + 1));
  else echo "FAIL $name"; failed=$((failed + 1)); fi
}

expect "version" 0 "" -- "$GRAFT" version
check "version names graft" grep -q "^graft " "$TMP/out"
# The numbers the README says the demo prints are the ones it prints.
expect "the README's demo" 0 "" -- "$GRAFT" apply --pipeline rules/pipelines/inference.yaml "$EXAMPLE" -o "$TMP/demo.pb" --outputs Identity
demo_nodes=$(grep -oE "nodes [0-9]+ -> [0-9]+" "$TMP/err" | grep -oE "[0-9]+ -> [0-9]+")
demo_quants=$(grep -E "quantize_(weights|activation): [0-9]+ applied" "$TMP/err" | grep -oE "[0-9]+ applied" | grep -oE "[0-9]+" | awk '{s += $1} END {print s}')
check "the README's demo node counts ($demo_nodes)" grep -q "node counts before and after ($demo_nodes)" README.md
check "the README's demo fake-quant count ($demo_quants)" grep -q "and $demo_quants fake-quant ops inserted" README.md
expect "the README's library fold" 0 "" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$TMP/lib_fold.pb"
lib_nodes=$(grep -oE "nodes [0-9]+ -> [0-9]+" "$TMP/err" | grep -oE "[0-9]+ -> [0-9]+")
check "the README's library fold node counts ($lib_nodes)" grep -q "(4 folded, $lib_nodes nodes)" README.md
expect "--version" 0 "" -- "$GRAFT" --version
check "--version names graft" grep -q "^graft " "$TMP/out"
expect "check every shipped library at once (checkpoint and swap share budget_bytes)" 0 "" -- "$GRAFT" check rules/tf/checkpoint.graft rules/tf/swap.graft
# Libraries are grouped by dialect (rules/tf, rules/onnx); the paths from
# before still name them.
expect "an old library path (rules/fold_batch_norms.graft) still folds" 0 "" -- "$GRAFT" apply -r rules/fold_batch_norms.graft "$EXAMPLE" -o "$TMP/old_path.pb"
check "... to the same bytes as rules/tf/" cmp -s "$TMP/old_path.pb" "$TMP/lib_fold.pb"
expect "an old GTT path still checks" 0 "" -- "$GRAFT" check rules/gtt/fold_constants.graft
expect "an old onnxoptimizer path still checks" 0 "" -- "$GRAFT" check rules/onnxoptimizer/eliminate_identity.graft
expect "a path that names nothing, old or new, is still an error" 1 "rules/no_such_library.graft: error: cannot read the rule file" -- "$GRAFT" check rules/no_such_library.graft
printf 'param budget_bytes: int = 5\nrule r { match { n = Relu(_) where budget_bytes > 1 } rewrite { erase n } }\n' > "$TMP/other_budget.graft"
expect "one param declared differently in two files" 1 "param .budget_bytes. is declared here and in .rules/tf/checkpoint.graft. \(line [0-9]+\) differently" -- "$GRAFT" check rules/tf/checkpoint.graft "$TMP/other_budget.graft"
for sub in stats convert validate version; do
  expect "$sub --help" 0 "" -- "$GRAFT" "$sub" --help
  check "$sub --help prints usage" grep -q "Usage: graft $sub" "$TMP/out"
done
expect "no subcommand is a usage error" 2 "subcommand is required" -- "$GRAFT"
expect "unknown subcommand" 2 "" -- "$GRAFT" frobnicate
expect "missing argument" 2 "model is required" -- "$GRAFT" stats
expect "bad --format" 2 "expected pb, pbtxt, onnx or auto" -- "$GRAFT" stats --format caffe "$EXAMPLE"

# stats
expect "stats" 0 "" -- "$GRAFT" stats "$EXAMPLE"
check "stats counts nodes" grep -q "^nodes: 68$" "$TMP/out"
check "stats lists ops" grep -qE "^  FusedBatchNormV3 +4$" "$TMP/out"
check "stats names inputs" grep -q "^inputs: input$" "$TMP/out"
expect "stats --json" 0 "" -- "$GRAFT" stats --json tests/data/control_devices.pbtxt
check "json has node count" grep -q '"num_nodes": "16"' "$TMP/out"
check "json has devices" grep -q '"/device:CPU:0"' "$TMP/out"

# convert round trip pb -> pbtxt -> pb is byte-identical for this graph
expect "convert pb to pbtxt" 0 "wrote" -- "$GRAFT" convert tests/data/control_devices.pb "$TMP/cd.pbtxt"
expect "convert pbtxt to pb" 0 "" -- "$GRAFT" convert "$TMP/cd.pbtxt" "$TMP/cd.pb"
expect "validate converted" 0 "" -- "$GRAFT" validate "$TMP/cd.pb"
expect "convert pb to pb" 0 "" -- "$GRAFT" convert "$EXAMPLE" "$TMP/same.pb"
check "pb to pb is byte-identical" cmp -s "$EXAMPLE" "$TMP/same.pb"
expect "convert with --output-format" 0 "" -- "$GRAFT" convert "$EXAMPLE" "$TMP/text.out" --output-format pbtxt
check "output format override wrote text" grep -q '^node {' "$TMP/text.out"

# validate
expect "validate example" 0 "" -- "$GRAFT" validate "$EXAMPLE" --outputs Identity
expect "validate missing output" 1 "output \`logits\` is not in the graph" -- "$GRAFT" validate "$EXAMPLE" --outputs Identity,logits
printf 'node { name: "a" op: "Identity" input: "ghost" attr { key: "T" value { type: DT_FLOAT } } }\n' > "$TMP/dangling.pbtxt"
expect "validate dangling input" 1 "dangling.pbtxt: error: input 0 of \`a\` names \`ghost\`" -- "$GRAFT" validate "$TMP/dangling.pbtxt"

# bad input: message names the file, exit 1, nothing written
expect "missing file" 1 "nope.pb: error: no such file" -- "$GRAFT" stats "$TMP/nope.pb"
expect "directory" 1 "is a directory" -- "$GRAFT" stats "$TMP"
expect "unreadable path" 1 "keras_cnn.pb/model.pb: error: Not a directory" -- "$GRAFT" stats "$EXAMPLE/model.pb"
head -c 20000 "$EXAMPLE" > "$TMP/truncated.pb"
expect "truncated protobuf" 1 "truncated.pb: error: not a valid binary GraphDef: node #[0-9]+ is truncated" -- "$GRAFT" stats "$TMP/truncated.pb"
printf '\x0a\x05\xff\xff\xff\xff\xff%.0s' {1..100} > "$TMP/garbled.pb"
expect "garbled protobuf" 1 "garbled.pb: error: not a valid binary GraphDef" -- "$GRAFT" stats "$TMP/garbled.pb"
printf 'node {\n  name: "a"\n  op: NoOp\n}\n' > "$TMP/syntax.pbtxt"
expect "text syntax error" 1 "syntax.pbtxt:3:7: error: " -- "$GRAFT" stats "$TMP/syntax.pbtxt"
expect "convert bad input writes nothing" 1 "truncated.pb: error" -- "$GRAFT" convert "$TMP/truncated.pb" "$TMP/never.pb"
check "no output after bad input" test ! -e "$TMP/never.pb"
expect "output in a missing folder" 1 "cannot write: folder .*does not exist" -- "$GRAFT" convert "$EXAMPLE" "$TMP/missing/dir/out.pb"
check "no output in missing folder" test ! -e "$TMP/missing/dir/out.pb"
check "no temporary files left" test -z "$(ls "$TMP" | grep tmp- || true)"

# inputs are never modified unless --in-place
cp tests/data/control_devices.pbtxt "$TMP/inplace.pbtxt"
cp "$TMP/inplace.pbtxt" "$TMP/inplace.orig"
expect "convert onto its input refuses" 2 "refusing to overwrite the input" -- "$GRAFT" convert "$TMP/inplace.pbtxt" "$TMP/inplace.pbtxt"
check "input untouched" cmp -s "$TMP/inplace.pbtxt" "$TMP/inplace.orig"
expect "convert --in-place" 0 "" -- "$GRAFT" convert --in-place "$TMP/inplace.pbtxt" "$TMP/inplace.pbtxt"
expect "in-place result still loads" 0 "" -- "$GRAFT" validate "$TMP/inplace.pbtxt"

# lint in check
printf 'param unused_p: int = 3\nrule a {\n  match { r = Relu(x) }\n  rewrite { replace r with x }\n}\nrule b {\n  priority 0\n  match { r = Relu(x) }\n  rewrite { t = Tanh(x) replace r with t }\n}\n' > "$TMP/lint.graft"
expect "lint warnings do not fail check" 0 "lint.graft:1:1: warning: param \`unused_p\` is never used" -- "$GRAFT" check "$TMP/lint.graft"
check "lint finds a rule that can never fire" grep -q "lint.graft:6:1: warning: rule \`b\` can never fire: \`a\` has the same pattern, no guard, and is tried first" "$TMP/err"
check "check counts warnings" grep -q "^ok: 2 rule(s) in 1 file(s), 2 warning(s)$" "$TMP/out"

# apply and check
G=tests/golden
for sub in apply check; do
  expect "$sub --help" 0 "" -- "$GRAFT" "$sub" --help
done
expect "check good rules" 0 "" -- "$GRAFT" check $G/fold_bn_conv/rules.graft $G/imports/rules.graft
check "check counts rules" grep -q "^ok: 3 rule(s) in 3 file(s)$" "$TMP/out"
printf 'rule a {\n  match { c = Conv2d(_, _) }\n  rewrite { erase c }\n}\n' > "$TMP/bad.graft"
expect "check bad rules" 1 "bad.graft:2:15: error: unknown op \`Conv2d\`" -- "$GRAFT" check "$TMP/bad.graft"
check "check shows a did-you-mean note" grep -q "note: did you mean \`Conv2D\`?" "$TMP/err"
expect "apply rules" 0 "1 rewrite" -- "$GRAFT" apply -r $G/fold_bn_conv/rules.graft $G/fold_bn_conv/in.pbtxt -o "$TMP/folded.pbtxt" --report "$TMP/report.json"
check "apply output is the golden output" cmp -s "$TMP/folded.pbtxt" $G/fold_bn_conv/out.pbtxt
check "report counts the rewrite" grep -q '"applied": "1"' "$TMP/report.json"
check "report names the rule" grep -q '"name": "fold_bn"' "$TMP/report.json"
expect "apply a pipeline" 0 "" -- "$GRAFT" apply --pipeline tests/data/pipeline.yaml $G/params_from_pipeline/in.pbtxt -o "$TMP/piped.pbtxt"
check "pipeline params reach the rules" grep -q 'name: "r/clip_ci"' "$TMP/piped.pbtxt"
expect "apply --param" 0 "" -- "$GRAFT" apply -r $G/params_from_pipeline/rules.graft --param tag=cli $G/params_from_pipeline/in.pbtxt -o "$TMP/p.pbtxt"
check "cli param used" grep -q 'name: "r/clip_cli"' "$TMP/p.pbtxt"
expect "apply unknown param" 2 "unknown param \`colour\`" -- "$GRAFT" apply -r $G/params_from_pipeline/rules.graft --param colour=red $G/params_from_pipeline/in.pbtxt -o "$TMP/never2.pbtxt"
expect "apply ill-typed param" 2 "param \`clip\`: \`big\` is not a float" -- "$GRAFT" apply -r $G/params_from_pipeline/rules.graft --param clip=big $G/params_from_pipeline/in.pbtxt -o "$TMP/never2.pbtxt"
expect "apply bad rules writes nothing" 1 "unknown op" -- "$GRAFT" apply -r "$TMP/bad.graft" $G/fold_bn_conv/in.pbtxt -o "$TMP/never2.pbtxt"
check "no output after bad rules" test ! -e "$TMP/never2.pbtxt"
printf 'steps:\n  - rulez: x.graft\n' > "$TMP/bad.yaml"
expect "bad pipeline is located" 1 "bad.yaml:2:5: error: unknown key \`rulez\`" -- "$GRAFT" apply --pipeline "$TMP/bad.yaml" $G/fold_bn_conv/in.pbtxt -o "$TMP/never2.pbtxt"
expect "apply needs rules or a pipeline" 2 "give rule files" -- "$GRAFT" apply $G/fold_bn_conv/in.pbtxt -o "$TMP/never2.pbtxt"
# A pipeline step that does not converge stops the pipeline: later steps do
# not run, nothing is written (an existing output is left as it was), and the
# message names the step and the rules still firing.
expect "non-converging pipeline step" 1 "step 1 of 2 \(\`rules/tf/fold_batch_norms.graft\`\) did not converge; 1 later step\(s\) not run: no fixpoint after 1 rewrites; still firing: \`fold_fused_batch_norm\`" -- "$GRAFT" apply --pipeline rules/pipelines/inference.yaml --max-rewrites 1 "$EXAMPLE" -o "$TMP/never_pipe.pb" --report "$TMP/never_pipe.json"
check "no output after a non-converging step" test ! -e "$TMP/never_pipe.pb"
check "no report after a non-converging step" test ! -e "$TMP/never_pipe.json"
check "later steps reported as not run" grep -q "step 2 of 2 .*: not run" "$TMP/err"
echo "keep me" > "$TMP/kept.pb"
expect "non-converging step leaves an existing output" 1 "did not converge" -- "$GRAFT" apply --pipeline rules/pipelines/inference.yaml --max-rewrites 1 "$EXAMPLE" -o "$TMP/kept.pb"
check "existing output intact" grep -qx "keep me" "$TMP/kept.pb"
expect "a non-converging -r run writes nothing" 1 "did not converge: no fixpoint" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft --max-rewrites 1 "$EXAMPLE" -o "$TMP/never_r.pb"
check "no output after a non-converging -r run" test ! -e "$TMP/never_r.pb"
expect "apply reports skipped rewrites" 0 "skipped bypass_identity at \`output\`" -- "$GRAFT" apply -r $G/safety_skips_unsafe_rewrite/rules.graft $G/safety_skips_unsafe_rewrite/in.pbtxt -o "$TMP/s.pbtxt"

# The README's five-minute rule, step by step on the bundled model.
sed -n 1,14p examples/fold_bn.graft | sed 's/(Conv2D | DepthwiseConv2dNative)/Conv2D/' > "$TMP/tutorial1.graft"
expect "tutorial: the first rule alone matches nothing" 0 "0 rewrite\(s\); nodes 68 -> 68" -- "$GRAFT" apply -r "$TMP/tutorial1.graft" "$EXAMPLE" -o "$TMP/tutorial1.pb"
expect "tutorial: explain says why" 0 "" -- "$GRAFT" explain -r "$TMP/tutorial1.graft" "$EXAMPLE" --node keras_cnn/batch_normalization/FusedBatchNormV3
check "tutorial: the reason is the Identity read" grep -q "no match: operand 1 of \`bn\`: expected Const, found Identity \`keras_cnn/batch_normalization/ReadVariableOp\`" "$TMP/out"
expect "tutorial: the finished rule file folds 3 of 4" 0 "fold_bn: 3 applied" -- "$GRAFT" apply -r examples/fold_bn.graft "$EXAMPLE" -o "$TMP/tutorial.pb"
check "tutorial: nodes 68 -> 74" grep -q "nodes 68 -> 74" "$TMP/err"

# A rule computing on a constant of 2^62 elements: that rewrite is skipped
# with the reason (no allocation that aborts), the rest goes on.
python3 -c "
n = 'node { name: \"c\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2147483648 } dim { size: 2147483648 } } float_val: 1 } } } }\n'
n += 'node { name: \"r\" op: \"Relu\" input: \"c\" attr { key: \"T\" value { type: DT_FLOAT } } }\n'
open('$TMP/huge.pbtxt', 'w').write(n)
open('$TMP/fold_huge.graft', 'w').write('rule a {\n  match { r = Relu(c: Const) }\n  rewrite {\n    replace r with Const(rsqrt(c))\n  }\n}\n')
"
expect "a huge constant is refused, not allocated" 0 "skipped a at .r.: .*has [0-9]+ elements; rules compute on constants of at most 67108864" -- "$GRAFT" apply -r "$TMP/fold_huge.graft" "$TMP/huge.pbtxt" -o "$TMP/huge_out.pbtxt"
expect "--outputs before the positional input" 0 "" -- "$GRAFT" apply -r $G/fold_bn_conv/rules.graft --outputs relu $G/fold_bn_conv/in.pbtxt -o "$TMP/outputs_first.pbtxt"

# A rewrite that would make the graph invalid is rolled back and reported;
# the others are applied and the run succeeds.
expect "an invalid rewrite is rolled back, the rest applied" 0 "skipped add_int_one at .rf.: the rewrite would make the graph invalid: input 1 of .rf. \(AddV2\) expects float32 but .rf/Const. is int32" -- "$GRAFT" apply -r $G/safety_invalid_rewrite_rolled_back/rules.graft $G/safety_invalid_rewrite_rolled_back/in.pbtxt -o "$TMP/rolled_back.pbtxt"
check "the valid rewrite was applied" grep -q 'name: "ri/Const"' "$TMP/rolled_back.pbtxt"

# graft test: a no_match test fails when the rule matched and its rewrite was
# rolled back; a failed expectation says why graft rolled a rewrite back.
RB="$PWD/$G/safety_invalid_rewrite_rolled_back/in.pbtxt"
printf 'rule add_int_one {\n  match { r = Relu(x) where r.T == "float32" }\n  rewrite {\n    out = AddV2(x, Const(cast(1, "int32")))\n    replace r with out\n  }\n  test "float relus" { input "%s" no_match }\n  test "no relu left" { input "%s" expect_ops { Relu: 0 } }\n}\n' "$RB" "$RB" > "$TMP/rolled_back.graft"
expect "graft test with a rolled-back match" 1 "" -- "$GRAFT" test "$TMP/rolled_back.graft"
check "no_match fails on it" grep -qE "float relus: expected no match, but .add_int_one. matched at .rf. and its rewrite was rolled back: the rewrite would make the graph invalid" "$TMP/out"
check "a failed expectation says why" grep -qE "no relu left: Relu: 2 node\(s\), expected 0; .add_int_one. at .rf. was rolled back: the rewrite would make the graph invalid" "$TMP/out"

# A comprehension iterates a constant's values: the same explicit paddings
# as the golden case's reshape.
PC=$G/const_into_list_attr
sed 's/explicit_paddings: reshape(p, \[-1\])/explicit_paddings: [v for v in p]/' $PC/rules.graft > "$TMP/pad_comprehension.graft"
expect "a comprehension over a constant's values" 0 "" -- "$GRAFT" apply -q -r "$TMP/pad_comprehension.graft" $PC/in.pbtxt -o "$TMP/pad_comprehension.pbtxt"
"$GRAFT" apply -q -r $PC/rules.graft $PC/in.pbtxt -o "$TMP/pad_reshape.pbtxt"
check "... gives what reshape gives" cmp -s "$TMP/pad_comprehension.pbtxt" "$TMP/pad_reshape.pbtxt"

# validate refuses what TensorFlow's importer refuses: an op it does not
# have (unless declared custom) and a string attr value its op does not allow.
printf 'node { name: "x" op: "Placehodler" attr { key: "dtype" value { type: DT_FLOAT } } }\n' > "$TMP/typo_op.pbtxt"
expect "validate: an unknown op" 1 "\`x\` has op \`Placehodler\`, which TensorFlow does not have \(did you mean \`Placeholder\`\?\); a custom op is declared with --custom-op Placehodler" -- "$GRAFT" validate "$TMP/typo_op.pbtxt"
expect "validate: a declared custom op" 0 "" -- "$GRAFT" validate "$TMP/typo_op.pbtxt" --custom-op Placehodler
printf '# our runtime'"'"'s ops\nPlacehodler\n' > "$TMP/custom_ops.txt"
expect "validate: custom ops from a file" 0 "" -- "$GRAFT" validate "$TMP/typo_op.pbtxt" --custom-ops "$TMP/custom_ops.txt"
sed 's/s: "SAME"/s: "EXPLICT"/' $G/fold_bn_conv/in.pbtxt > "$TMP/explict.pbtxt"
expect "validate: a padding its op does not allow" 1 "attr \`padding\` of \`conv\` \(Conv2D\) is \"EXPLICT\", not one of its op's values \(SAME, VALID, EXPLICIT\); did you mean \"EXPLICIT\"\?" -- "$GRAFT" validate "$TMP/explict.pbtxt"
expect "apply writes no graph TensorFlow would refuse" 1 "nothing written: .*Placehodler" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$TMP/typo_op.pbtxt" -o "$TMP/typo_out.pbtxt"
check "... nothing written" test ! -e "$TMP/typo_out.pbtxt"
expect "apply with the custom op declared" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$TMP/typo_op.pbtxt" -o "$TMP/typo_out.pbtxt" --custom-op Placehodler

# A list item an attr cannot take is an error naming it, never dropped.
sed 's/\[1, max(w) + 1, max(w) + 1, 1\]/[1, "two", max(w), 1]/' $G/rewrite_set_list_computed/rules.graft > "$TMP/bad_list.graft"
expect "a list item that does not convert is reported" 0 "skipped dilate at .c.: .*bad_list.graft:9: attr .dilations.: item 2 is a string, not an integer" -- "$GRAFT" apply -r "$TMP/bad_list.graft" $G/rewrite_set_list_computed/in.pbtxt -o "$TMP/bad_list.pbtxt"
# Const(v) { dtype: d } converts v; a value d cannot hold is reported.
printf 'rule a {\n  match {\n    r = Relu(x)\n  }\n  rewrite {\n    out = AddV2(x, Const([1, 300]) { dtype: "int8" })\n    replace r with out\n  }\n}\n' > "$TMP/int8.graft"
expect "a constant value its dtype cannot hold is reported" 0 "skipped a at .r.: .*int8.graft:6: Const: value 300 does not fit int8" -- "$GRAFT" apply -r "$TMP/int8.graft" $G/rewrite_const_dtype/in.pbtxt -o "$TMP/int8.pbtxt"

# A guard that fails with an error (not false) is reported: counted per
# rule in the summary and the report, with its first message.
sed 's/c.strides == \[1, 1, 1, 1\]/c.strides < [1, 1, 1, 1]/' $G/pattern_list_equality/rules.graft > "$TMP/guard_error.graft"
expect "guard errors are reported" 0 "tag_unit_strides: 0 applied, 2 guard error\(s\)" -- "$GRAFT" apply -r "$TMP/guard_error.graft" $G/pattern_list_equality/in.pbtxt -o "$TMP/guard_error.pbtxt" --report "$TMP/guard_error.json"
check "the guard error names the guard and why" grep -q "guard error in tag_unit_strides at .unit.: guard .c.strides < \[1, 1, 1, 1\]. failed: cannot compare a list with a list" "$TMP/err"
check "the report lists guard errors" grep -q '"guard_errors": \[' "$TMP/guard_error.json"

# diff
expect "diff --help" 0 "" -- "$GRAFT" diff --help
expect "diff of a fold" 0 "" -- "$GRAFT" diff $G/fold_bn_conv/in.pbtxt $G/fold_bn_conv/out.pbtxt
check "diff summary" grep -q "^3 added, 6 removed, 1 changed$" "$TMP/out"
check "diff shows the rewired input" grep -q "input 0: \`conv\` -> \`bn/folded\`" "$TMP/out"
expect "diff --exit-code on different graphs" 1 "" -- "$GRAFT" diff --exit-code $G/fold_bn_conv/in.pbtxt $G/fold_bn_conv/out.pbtxt
expect "diff --exit-code on the same graph" 0 "" -- "$GRAFT" diff --exit-code "$EXAMPLE" "$EXAMPLE"
expect "diff as dot" 0 "" -- "$GRAFT" diff --format dot $G/fold_bn_conv/in.pbtxt $G/fold_bn_conv/out.pbtxt
check "dot output" grep -q "^digraph diff {" "$TMP/out"
expect "apply --diff" 0 "" -- "$GRAFT" apply --diff -r $G/fold_bn_conv/rules.graft $G/fold_bn_conv/in.pbtxt -o "$TMP/d.pbtxt"
check "apply --diff prints the diff" grep -q "^3 added, 6 removed, 1 changed$" "$TMP/out"

# explain
expect "explain --help" 0 "" -- "$GRAFT" explain --help
expect "explain lists matches" 0 "" -- "$GRAFT" explain -r $G/fold_bn_conv/rules.graft $G/fold_bn_conv/in.pbtxt
check "explain shows bindings" grep -q "^    w = \`w\`$" "$TMP/out"
check "explain counts matches" grep -q "^fold_bn: 1 match(es)$" "$TMP/out"
expect "explain why not" 0 "" -- "$GRAFT" explain -r rules/tf/fold_batch_norms.graft "$EXAMPLE" --rule fold_unfused_batch_norm --node keras_cnn/add/add
check "explain names the failing operand" grep -q "no match: operand 0 of operand 1 of \`add\`: expected Const, found FusedBatchNormV3" "$TMP/out"
expect "explain unknown node" 1 "no node \`nope\`" -- "$GRAFT" explain -r $G/fold_bn_conv/rules.graft $G/fold_bn_conv/in.pbtxt --node nope

# quantize params are range-checked
expect "bits outside 2..16" 2 "param \`bits\`: 20 is outside 2..16" -- "$GRAFT" apply -r rules/tf/quantize.graft --param bits=20 $G/quantize_activations/in.pbtxt -o "$TMP/never3.pbtxt"
check "nothing written after a bad param" test ! -e "$TMP/never3.pbtxt"
expect "unknown quantize param" 2 "unknown param \`bitz\`" -- "$GRAFT" apply -r rules/tf/quantize.graft --param bitz=8 $G/quantize_activations/in.pbtxt -o "$TMP/never4.pbtxt"

# calibrated ranges: bad files are located errors, nothing is written
printf 'r6: [0, 5]\nr: [4, 1]\n' > "$TMP/minmax.yaml"
expect "range file with min > max" 1 "minmax.yaml:2:1: error: \`r\`: min 4 is greater than max 1" -- "$GRAFT" apply -r rules/tf/quantize.graft --param ranges="$TMP/minmax.yaml" $G/quantize_activations/in.pbtxt -o "$TMP/never4.pbtxt"
printf 'r6: [0, 5]\n\nconv2/Relu: [0, 1]\n' > "$TMP/unknown.yaml"
expect "range file naming a tensor not in the graph" 1 "param \`ranges\`: $TMP/unknown.yaml:3:1: tensor \`conv2/Relu:0\` is not in the graph" -- "$GRAFT" apply -r rules/tf/quantize.graft --param ranges="$TMP/unknown.yaml" $G/quantize_activations/in.pbtxt -o "$TMP/never4.pbtxt"
expect "missing range file" 1 "cannot read the range file" -- "$GRAFT" apply -r rules/tf/quantize.graft --param ranges="$TMP/nope.yaml" $G/quantize_activations/in.pbtxt -o "$TMP/never4.pbtxt"
check "nothing written after a bad range file" test ! -e "$TMP/never4.pbtxt"
sed 's/input: "mw"/input: "mw" attr { key: "transpose_b" value { b: true } }/' $G/quantize_weights_per_channel/in.pbtxt > "$TMP/transposed.pbtxt"
expect "per_channel on a transposed MatMul filter" 1 "rule \`per_channel_axis_unknown\` failed at \`mm\`: rules/tf/quantize.graft:[0-9]+: per_channel: the output channels of \`mw\` are on axis 0" -- "$GRAFT" apply -r rules/tf/quantize.graft --param per_channel=true "$TMP/transposed.pbtxt" -o "$TMP/never5.pbtxt"
check "nothing written after a failed rule" test ! -e "$TMP/never5.pbtxt"
expect "per tensor on a transposed MatMul filter" 0 "" -- "$GRAFT" apply -q -r rules/tf/quantize.graft "$TMP/transposed.pbtxt" -o "$TMP/transposed_q.pbtxt"
check "the transposed filter is quantized per tensor" grep -q 'name: "mw/weights_quant"' "$TMP/transposed_q.pbtxt"

# graph surgery: pre-/post-processing grafts and their checks
GIO=$G/graft_io_preprocessing
expect "graft a preprocessing graph" 0 "add_preprocessing: 1 applied" -- "$GRAFT" apply -r rules/tf/graft_io.graft --param preprocessing=$GIO/pre.pbtxt $GIO/in.pbtxt -o "$TMP/pre_out.pbtxt"
check "the input keeps its name, now uint8" grep -q "type: DT_UINT8" "$TMP/pre_out.pbtxt"
sed 's/name: "image"/name: "pixels"/; s/input: "image"/input: "pixels"/' $GIO/pre.pbtxt > "$TMP/pre_other.pbtxt"
expect "a placeholder that names no input" 1 "placeholder \`pixels\` names no input of the target graph \(its inputs: image\)" -- "$GRAFT" apply -r rules/tf/graft_io.graft --param preprocessing="$TMP/pre_other.pbtxt" $GIO/in.pbtxt -o "$TMP/never6.pbtxt"
sed 's/image_preprocessed/image_scaled/' $GIO/pre.pbtxt > "$TMP/pre_nameless.pbtxt"
expect "no <name>_preprocessed node" 1 "has no node \`image_preprocessed\` for its placeholder \`image\`" -- "$GRAFT" apply -r rules/tf/graft_io.graft --param preprocessing="$TMP/pre_nameless.pbtxt" $GIO/in.pbtxt -o "$TMP/never6.pbtxt"
printf 'node { name: "s" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\nnode { name: "s_postprocessed" op: "Neg" input: "s" attr { key: "T" value { type: DT_FLOAT } } }\n' > "$TMP/post_split.pbtxt"
printf 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\nnode { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }\nnode { name: "s" op: "Split" input: "axis" input: "x" attr { key: "num_split" value { i: 2 } } attr { key: "T" value { type: DT_FLOAT } } }\n' > "$TMP/split.pbtxt"
expect "postprocessing an op with two outputs" 1 "\`s\` \(Split\) has 2 outputs; postprocessing takes an op with one output" -- "$GRAFT" apply -r rules/tf/graft_io.graft --param postprocessing="$TMP/post_split.pbtxt" "$TMP/split.pbtxt" -o "$TMP/never6.pbtxt"
expect "a graph param naming no file" 1 "cannot load the graph" -- "$GRAFT" apply -r rules/tf/graft_io.graft --param preprocessing="$TMP/nope.pbtxt" $GIO/in.pbtxt -o "$TMP/never6.pbtxt"
check "nothing written after a bad graft" test ! -e "$TMP/never6.pbtxt"
expect "a reroute between incompatible shapes is skipped, with the reason" 0 "their shapes differ" -- "$GRAFT" apply -r $G/surgery_compatibility/rules.graft $G/surgery_compatibility/in.pbtxt -o "$TMP/compat.pbtxt"
check "... and changes nothing" "$GRAFT" diff --exit-code $G/surgery_compatibility/in.pbtxt "$TMP/compat.pbtxt"

# training-graph analyses and the cost model
D=tests/data
expect "mem on a training graph" 0 "" -- "$GRAFT" mem $D/convnet_train.pb --top 3
check "mem finds the regions" grep -q "regions: loss \`loss\`, seed \`gradients/grad_ys_0\`" "$TMP/out"
check "mem reports the peak" grep -qE "device \(unplaced\): peak [0-9.]+ MiB \([0-9]+ bytes\) at step [0-9]+" "$TMP/out"
check "mem names TensorFlow's unknown reserve space" grep -q "stem_bn:5 (FusedBatchNormV3)" "$TMP/out"
check "mem states the schedule it assumes" grep -q "^schedule: .*TensorFlow's executor order" "$TMP/out"
expect "mem with two threads" 0 "" -- "$GRAFT" mem --threads 2 $D/convnet_train.pb --top 1
check "... says siblings run together" grep -q "^schedule: TensorFlow's executor order, 2 threads (.*siblings the thread pool runs at once together" "$TMP/out"
expect "mem with one thread" 0 "" -- "$GRAFT" mem --threads 1 $D/convnet_train.pb --top 1
check "... one op at a time" grep -q "^schedule: one op at a time, in TensorFlow's executor order" "$TMP/out"
expect "mem with Eigen's kernels" 0 "" -- "$GRAFT" mem --cpu-kernels eigen --threads 2 $D/convnet_train.pb --top 1
check "... counts the convolution gradients' scratch" grep -qE "scratch at the peak: [0-9.]+ MiB \(.gradients/b[0-9]_c[0-9]_grad/Conv2DBackprop(Filter|Input)., while it runs\)" "$TMP/out"
check "... and says so" grep -q "with the scratch of eigen CPU kernels (ops with scratch made ready together run at once" "$TMP/out"
expect "mem --cpu-kernels takes onednn or eigen" 2 "cpu-kernels: mkl not in .onednn,eigen." -- "$GRAFT" mem --cpu-kernels mkl $D/convnet_train.pb
expect "mem --json" 0 "" -- "$GRAFT" mem --json $D/mlp_train.pb
check "mem --json is JSON with a peak" python3 -c "import json,sys; d=json.load(open('$TMP/out')); assert d['devices'][0]['peak_bytes'] > 0 and d['unknown_shapes'] == 0 and 'executor order' in d['schedule']"
expect "mem with a loss that is not there" 1 "no loss node \`nope\`" -- "$GRAFT" mem --loss nope $D/mlp_train.pb
expect "mem on a missing file" 1 "mem: $TMP/nope.pb: error: no such file" -- "$GRAFT" mem "$TMP/nope.pb"
printf 'garbage' > "$TMP/garbage.pb"
expect "cost on a garbled file" 1 "cost: $TMP/garbage.pb: error: not a valid binary GraphDef" -- "$GRAFT" cost "$TMP/garbage.pb"
expect "mem on an inference graph (no regions)" 0 "" -- "$GRAFT" mem "$EXAMPLE"
# A node whose attr disagrees with its inputs (what the fuzzer found: shape
# inference read past a ConcatV2's inputs): refused, naming the node.
BAD_CONCAT=fuzz/regressions/analyze_training/concatv2-n-disagrees-with-inputs.pbtxt
expect "mem refuses a node that does not match its op" 1 "attr \`N\` of \`c\` is 1; its op wants at least 2; \`c\` \(ConcatV2\) has 3 data input\(s\); its op takes 2" -- "$GRAFT" mem "$BAD_CONCAT"
check "... and prints nothing" test ! -s "$TMP/out"
expect "cost refuses it too" 1 "\`c\` \(ConcatV2\) has 3 data input" -- "$GRAFT" cost "$BAD_CONCAT"
expect "the checkpoint plan refuses it" 1 "plan \`checkpoints\`: 1 node\(s\) do not match their op: attr \`N\` of \`c\`" -- "$GRAFT" apply -r rules/tf/checkpoint.graft "$BAD_CONCAT" -o "$TMP/bad_concat.pbtxt"
check "... writing nothing" test ! -e "$TMP/bad_concat.pbtxt"
expect "mem --skip-invalid-nodes analyses the rest and names the node" 0 "1 node\(s\) do not match their op; their outputs are unknown: \`c\`" -- "$GRAFT" mem --skip-invalid-nodes "$BAD_CONCAT"
check "... leaving its shape unknown" grep -q "not fully known: c (ConcatV2)" "$TMP/out"
check "... says why there are no regions" grep -q "regions: none (found no gradient seed" "$TMP/out"
expect "cost on H100" 0 "" -- "$GRAFT" cost $D/convnet_train.pb --device h100_sxm --top 5
check "cost: a small model is memory- and launch-bound on H100" grep -qE "^ +[0-9.]+ +[0-9.]+ +[0-9.]+  memory +ReluGrad" "$TMP/out"
check "cost splits forward and backward" grep -qE "forward [0-9.]+ us, backward [0-9.]+ us" "$TMP/out"
expect "cost on the CPU profile" 0 "" -- "$GRAFT" cost $D/convnet_train.pb --device cpu --top 5
check "cost: convolutions are compute-bound on the CPU" grep -qE "^ +[0-9.]+ +[0-9.]+ +[0-9.]+  compute +Conv2D" "$TMP/out"
expect "cost on an unknown device" 1 "no device profile \`tpu\` \(shipped: a100, cpu, h100_pcie, h100_sxm, h200; or a YAML file\)" -- "$GRAFT" cost $D/mlp_train.pb --device tpu
printf 'name: slow\npeak_tflops: {float32: 1}\nmemory_bandwidth_gbps: 10\nlaunch_overhead_us: 0\n' > "$TMP/slow.yaml"
expect "cost with a profile file" 0 "" -- "$GRAFT" cost --json $D/mlp_train.pb --device "$TMP/slow.yaml"
check "cost --json is JSON" python3 -c "import json; d=json.load(open('$TMP/out')); assert d['device'] == 'slow' and d['time_us'] > 0"
expect "apply with an unknown cost device" 1 "no device profile \`tpu\`" -- "$GRAFT" apply -r rules/tf/quantize.graft --device tpu $D/mlp_train.pb -o "$TMP/never7.pb"

# fmt
expect "fmt --help" 0 "" -- "$GRAFT" fmt --help
expect "shipped and golden rule files are formatted" 0 "" -- "$GRAFT" fmt --check rules $G
printf 'rule a{\nmatch {  c=Relu( x )}\nrewrite{replace c with x}}\n' > "$TMP/ugly.graft"
cp "$TMP/ugly.graft" "$TMP/ugly.orig"
expect "fmt --check finds an unformatted file" 1 "not formatted; run graft fmt on them" -- "$GRAFT" fmt --check "$TMP/ugly.graft"
check "fmt --check prints a diff" grep -q "^+  match { c = Relu(x) }$" "$TMP/out"
check "fmt --check changes nothing" cmp -s "$TMP/ugly.graft" "$TMP/ugly.orig"
expect "fmt rewrites the file" 0 "formatted" -- "$GRAFT" fmt "$TMP/ugly.graft"
expect "fmt is idempotent" 0 "" -- "$GRAFT" fmt --check "$TMP/ugly.graft"
expect "formatted file still compiles" 0 "" -- "$GRAFT" check "$TMP/ugly.graft"
printf 'rule a {\n  match { x = Relu(y }\n}\n' > "$TMP/broken.graft"
expect "fmt reports syntax errors" 1 "broken.graft:2:22: error" -- "$GRAFT" fmt "$TMP/broken.graft"

# tests inside rule files
expect "graft test on the shipped rules" 0 "" -- "$GRAFT" test rules
check "rule-file tests all pass" grep -qE "^[1-9][0-9]* passed, 0 failed$" "$TMP/out"
printf 'rule r {\n  match { n = Relu(_) where n.device == "" }\n  rewrite { device n "/device:CPU:0" }\n  test "wrong count" { input "%s" expect_ops { Relu: 5 } }\n  test "wrong edge" { input "%s" expect_edges { "a" -> "c" } }\n}\n' "$PWD/$G/pattern_wildcard/in.pbtxt" "$PWD/$G/pattern_wildcard/in.pbtxt" > "$TMP/failing.graft"
expect "a failing rule-file test fails" 1 "" -- "$GRAFT" test "$TMP/failing.graft"
check "a wrong edge is reported" grep -q "\`a\` does not feed \`c\`" "$TMP/out"
check "the failure names the test" grep -q "FAIL .*r / wrong count: Relu: 2 node(s), expected 5" "$TMP/out"

printf 'param k: int = 1\nrule r {\n  match { n = Relu(_) where k > 1 and n.device == "" }\n  rewrite { device n "/device:CPU:0" }\n  test "k two" { input "%s" param k = 2 no_match }\n  test "k bad" { input "%s" param k = "two" no_match }\n}\n' "$PWD/$G/pattern_wildcard/in.pbtxt" "$PWD/$G/pattern_wildcard/in.pbtxt" > "$TMP/params.graft"
expect "rule-file tests with params" 1 "" -- "$GRAFT" test "$TMP/params.graft"
check "a test's param is used" grep -q "FAIL .*r / k two: expected no match, got 2 rewrite" "$TMP/out"
check "a test's bad param is reported" grep -q "FAIL .*r / k bad: with its params the file does not compile: .*\`two\` is not an int" "$TMP/out"

# Input shapes for the analyses: the example's batch is dynamic, so its
# convolutions count no FLOPs until a batch is given.
expect "cost without a batch" 0 "" -- "$GRAFT" cost "$EXAMPLE"
check "no FLOPs with a dynamic batch" grep -q "0.0000 GFLOP" "$TMP/out"
expect "cost with --batch" 0 "" -- "$GRAFT" cost "$EXAMPLE" --batch 8
check "FLOPs with a batch" grep -q "0.0530 GFLOP" "$TMP/out"
expect "cost with --input-shape" 0 "" -- "$GRAFT" cost "$EXAMPLE" --input-shape input=8,32,32,3
check "the same with the input's shape" grep -q "0.0530 GFLOP" "$TMP/out"
expect "mem with --batch" 0 "" -- "$GRAFT" mem "$EXAMPLE" --batch 8
expect "an input shape for a node that is no input" 1 "\`keras_cnn/dense/MatMul\` is not a Placeholder of the graph" -- "$GRAFT" mem "$EXAMPLE" --input-shape keras_cnn/dense/MatMul=1,2
expect "a bad dimension" 2 "\`2x\` is not a dimension \\(a size, a name" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$TMP/shape.pb" --input-shape input=1,2x
expect "a named size" 0 "" -- "$GRAFT" mem "$EXAMPLE" --input-shape input=batch,32,32,3
expect "a shape that contradicts the graph's" 1 "\`input\` is \[\?, 32, 32, 3\] in the graph; the shape given contradicts it" -- "$GRAFT" mem "$EXAMPLE" --input-shape input=1,28,28,1
expect "... and a rank that does" 1 "the shape given contradicts it" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$TMP/shape.pb" --input-shape input=1,32,32
check "nothing written after a bad input shape" test ! -e "$TMP/shape.pb"
expect "apply --loss names a node" 1 "no node \`nope\` \(given by --loss\)" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$TMP/shape.pb" --loss nope
check "nothing written after a bad --loss" test ! -e "$TMP/shape.pb"
expect "apply takes the analyses' options" 0 "" -- "$GRAFT" apply -r tests/golden/schedule_hooks/rules.graft tests/golden/schedule_hooks/in.pbtxt -o "$TMP/sched.pbtxt" --loss loss --seed gradients/Fill --batch 4
check "the schedule hooks ran" grep -q "marks/gradient_of_dense_2_matmul" "$TMP/sched.pbtxt"

# Gradient checkpointing: the pipeline, an unreachable budget (a clear
# message, nothing written), an unknown strategy.
CK=tests/golden/checkpoint_memory_chain/in.pbtxt
expect "checkpoint pipeline" 0 "recompute_segment: [0-9]+ applied" -- "$GRAFT" apply --pipeline rules/pipelines/training-memory.yaml "$CK" -o "$TMP/ck.pbtxt"
check "copies made" grep -q "/recompute\"" "$TMP/ck.pbtxt"
check "the summary counts the recomputation" grep -qE "recomputed: [0-9]+ op\(s\), [0-9.]+ GFLOP on h100_sxm; peak 386 B -> [0-9]+ B \(graft mem, one op at a time\)" "$TMP/err"
expect "the report has it too" 0 "" -- "$GRAFT" apply -q --pipeline rules/pipelines/training-memory.yaml "$CK" -o "$TMP/ck2.pbtxt" --report "$TMP/ck.json"
# A clone whose original the rewrite removed moves it: no recomputation
# (Gemma 3's norm of Q's heads moved before their transpose)
expect "a moved norm" 0 "rms_norm_before_transpose: 2 applied" -- "$GRAFT" apply -r rules/onnx/transformers/rms_norm.graft tests/data/onnx/zoo_rms_norm_heads_folded.onnxtxt -o "$TMP/moved.onnx"
check "is no recomputation" bash -c "! grep -q recomputed '$TMP/err'"
check "recomputation in the report" grep -q '"peak_bytes_before": "386"' "$TMP/ck.json"
expect "checkpoint budget within reach" 0 "" -- "$GRAFT" apply -r rules/tf/checkpoint.graft --param strategy=budget --param budget_bytes=350 "$CK" -o "$TMP/ck_budget.pbtxt"
expect "an unreachable budget" 1 "plan \`checkpoints\`: a peak of 200 bytes cannot be reached: the graph's peak is [0-9]+ bytes and the best the checkpoints reach is about [0-9]+ bytes" -- "$GRAFT" apply -r rules/tf/checkpoint.graft --param strategy=budget --param budget_bytes=200 "$CK" -o "$TMP/ck_never.pbtxt"
check "nothing written for an unreachable budget" test ! -e "$TMP/ck_never.pbtxt"
expect "an unknown strategy" 1 "unknown checkpoint strategy \`fast\`: expected list, speed, memory or budget" -- "$GRAFT" apply -r rules/tf/checkpoint.graft --param strategy=fast "$CK" -o "$TMP/ck_never.pbtxt"

# Swap insertion: host and accelerator peaks apart, a bad exclude regex.
expect "swap pipeline" 0 "swap_to_host: [0-9]+ applied" -- "$GRAFT" apply --pipeline rules/pipelines/training-swap.yaml "$CK" -o "$TMP/swap.pbtxt" --device-default /device:GPU:0 --param threshold=1 --param min_distance=5
check "swap-outs on the host" grep -q "/device:CPU:0" "$TMP/swap.pbtxt"
check "the summary estimates the step with the copies" grep -qE "copies between devices: [0-9]+, [0-9.]+ us over the host link; step [0-9.]+ -> [0-9.]+ us on h100_sxm, copies overlapped" "$TMP/err"
expect "cost with copies between devices" 0 "" -- "$GRAFT" cost "$TMP/swap.pbtxt" --device-default /device:GPU:0
check "cost overlaps the copies" grep -qE "[0-9]+ copies between devices, [0-9.]+ us over the host link; the step with them overlapped: [0-9.]+ us" "$TMP/out"
expect "mem with a default device" 0 "" -- "$GRAFT" mem "$TMP/swap.pbtxt" --device-default /device:GPU:0
check "the host's peak" grep -q "device /device:CPU:0: peak" "$TMP/out"
check "and the accelerator's" grep -q "device /device:GPU:0: peak" "$TMP/out"
expect "an unreachable swap budget" 1 "an accelerator peak of 200 bytes cannot be reached by swapping: /device:GPU:0 peaks at [0-9]+ bytes as graft mem schedules it, at about [0-9]+ in the gradient order the library applies, and at about [0-9]+ with every swap that helps" -- "$GRAFT" apply -r rules/tf/swap.graft "$CK" -o "$TMP/swap_never.pbtxt" --device-default /device:GPU:0 --param threshold=1 --param min_distance=5 --param budget_bytes=200
check "nothing written for an unreachable swap budget" test ! -e "$TMP/swap_never.pbtxt"
expect "a swap budget within reach" 0 "" -- "$GRAFT" apply -q -r rules/tf/swap.graft "$CK" -o "$TMP/swap_300.pbtxt" --device-default /device:GPU:0 --param threshold=1 --param min_distance=5 --param budget_bytes=300
expect "mem of its result" 0 "" -- "$GRAFT" mem --json --threads 1 "$TMP/swap_300.pbtxt" --device-default /device:GPU:0
check "under the budget" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [x['peak_bytes'] for x in d['devices'] if x['device'] == '/device:GPU:0'][0] <= 300" "$TMP/out"
expect "a bad exclude regex" 1 "plan \`candidates\`" -- "$GRAFT" apply -r rules/tf/swap.graft "$CK" -o "$TMP/swap_never.pbtxt" --param "exclude=(("
check "nothing written after a bad exclude" test ! -e "$TMP/swap_never.pbtxt"

# Outputs: a symlink is written through (the link kept), `-` and
# /dev/stdout are standard output, a FIFO is written directly.
O="$TMP/outputs"
mkdir -p "$O"
ln -s target.pbtxt "$O/link.pbtxt"
expect "convert to a symlink" 0 "" -- "$GRAFT" convert "$EXAMPLE" "$O/link.pbtxt"
check "... keeps the link" test -L "$O/link.pbtxt"
check "... and writes its target" grep -q 'op: "Placeholder"' "$O/target.pbtxt"
echo "old" > "$O/target2.pbtxt"
ln -s target2.pbtxt "$O/link2.pbtxt"
expect "apply to a symlink of an existing file" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$O/link2.pbtxt"
check "... replaces the target, keeps the link" test -L "$O/link2.pbtxt" -a "$(grep -c 'op: "FusedBatchNorm' "$O/target2.pbtxt")" -eq 0 -a -s "$O/target2.pbtxt"
expect "convert to -" 0 "" -- "$GRAFT" convert "$EXAMPLE" - --output-format pbtxt
check "... streams the graph" grep -q 'op: "Placeholder"' "$TMP/out"
check "... and makes no file named -" test ! -e ./-
expect "apply -o -" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o - --output-format pbtxt
check "... streams the rewritten graph" test "$(grep -c 'op: "FusedBatchNorm' "$TMP/out")" -eq 0 -a "$(grep -c 'node {' "$TMP/out")" -gt 10
expect "convert to /dev/stdout" 0 "" -- "$GRAFT" convert "$EXAMPLE" /dev/stdout --output-format pbtxt
check "... streams it, /dev/stdout still a link" test -L /dev/stdout -a "$(grep -c 'node {' "$TMP/out")" -gt 10
mkfifo "$O/fifo"
(cat "$O/fifo" > "$O/from_fifo.pb") &
expect "convert to a FIFO" 0 "" -- "$GRAFT" convert "$EXAMPLE" "$O/fifo"
wait
check "... writes through it" cmp -s "$O/from_fifo.pb" "$EXAMPLE"
check "... and the FIFO stays" test -p "$O/fifo"
expect "apply --report -" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$EXAMPLE" -o "$O/r.pb" --report -
check "... prints the report" grep -q '"rewrites"' "$TMP/out"

# Batch outputs: collisions refused before anything is written; the output
# folder inside an input folder is not read back; an empty folder is an
# error that says so, and so is a SavedModel whose saved_model.pb is empty.
B="$TMP/batch_outputs"
mkdir -p "$B/a" "$B/b" "$B/zoo" "$B/empty" "$B/sm/variables"
cp "$EXAMPLE" "$B/a/m.pb"; cp "$EXAMPLE" "$B/b/m.pb"; cp "$EXAMPLE" "$B/zoo/x.pb"
touch "$B/sm/saved_model.pb"
expect "two inputs to one output" 1 "\`$B/a/m.pb\` and \`$B/b/m.pb\` would both be written to \`$B/out/m.pb\`" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$B/a/m.pb" "$B/b/m.pb" -o "$B/out"
check "... writes nothing" test ! -e "$B/out"
expect "an output folder inside the input folder" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$B/zoo" -o "$B/zoo/out"
expect "... is not read back next time" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$B/zoo" -o "$B/zoo/out" --report "$B/zoo.json"
check "... one model, no out/out" test ! -e "$B/zoo/out/out" -a "$(grep -c '"input": ".*out/' "$B/zoo.json")" -eq 0
expect "an empty folder" 1 "$B/empty: no models \(.pb, .pbtxt, .onnx files or SavedModels\) in this folder" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$B/empty" -o "$B/empty_out"
expect "a SavedModel with an empty saved_model.pb" 1 "$B/sm/saved_model.pb: error: a SavedModel with no MetaGraph" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$B/sm" -o "$B/sm_out"
check "... writes nothing" test ! -e "$B/sm_out"

# SavedModels, read and written in place: a round trip loads the same
# graph and keeps the variables byte for byte; bad bundles are located
# errors that write nothing.
SM=tests/data/saved_models/cnn
S="$TMP/saved_models"
mkdir -p "$S"
expect "stats of a SavedModel" 0 "" -- "$GRAFT" stats "$SM"
check "... says what it is and lists its functions" grep -qE "\(saved_model, .*\)|__inference_signature_wrapper" "$TMP/out"
expect "convert a SavedModel" 0 "wrote $S/copy \(saved_model, 23 nodes\)" -- "$GRAFT" convert "$SM" "$S/copy"
check "... variables byte for byte" cmp -s "$SM/variables/variables.data-00000-of-00001" "$S/copy/variables/variables.data-00000-of-00001"
check "... the same graph" "$GRAFT" diff --exit-code "$SM" "$S/copy"
check "... no stale fingerprint" test ! -e "$S/copy/fingerprint.pb"
expect "apply in place to a SavedModel" 0 "" -- "$GRAFT" apply -q --saved-model in-place --pipeline rules/pipelines/inference.yaml "$SM" -o "$S/q"
check "... its checkpoint functions untouched" bash -c "\"$GRAFT\" diff \"$SM\" \"$S/q\" | grep -q 'function __inference__wrapped_model' && ! \"$GRAFT\" diff \"$SM\" \"$S/q\" | grep -q 'function __inference__traced'"
expect "... and again over its own output" 0 "" -- "$GRAFT" apply -q --saved-model in-place --pipeline rules/pipelines/inference.yaml "$SM" -o "$S/q"
# In place, a function's variable reads are values to the rules: the
# batch norm folds inside the model's function, the variables stay.
expect "fold in place" 0 "function __inference__wrapped_model_142: 1 rewrite\(s\); nodes 18 -> 19; 6 variable read\(s\) folded into constants" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft --saved-model in-place "$SM" -o "$S/folded_in_place"
check "... variables byte for byte" cmp -s "$SM/variables/variables.data-00000-of-00001" "$S/folded_in_place/variables/variables.data-00000-of-00001"
check "... the index too" cmp -s "$SM/variables/variables.index" "$S/folded_in_place/variables/variables.index"
check "... the conv reads the folded filter, a constant of the body" bash -c "\"$GRAFT\" diff \"$SM\" \"$S/folded_in_place\" | grep -q '+ sequential/batch_normalization/FusedBatchNormV3/folded (Conv2D)'"
expect "... with --functions none nothing folds" 0 "graft apply: 0 rewrite" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft --saved-model in-place --functions none "$SM" -o "$S/none_in_place"
# Frozen (apply's default): the serving signature inlined, variables read
# as constants, so folding sees the weights; written without variables/.
expect "apply freezes a SavedModel" 0 "froze signature\(s\) serving_default: 2 call\(s\) inlined, 8 variable\(s\) as constants" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$SM" -o "$S/frozen"
check "... the batch norm folded" bash -c "\"$GRAFT\" stats \"$S/frozen\" | grep -q 'Conv2D  *1' && ! \"$GRAFT\" stats \"$S/frozen\" | grep -q FusedBatchNorm"
check "... no variables/ and no library" test ! -e "$S/frozen/variables" -a "$(\"$GRAFT\" stats --json "$S/frozen" | grep -c '"functions"')" -eq 0
expect "diff freezes the original to compare" 0 "" -- "$GRAFT" diff "$SM" "$S/frozen"
check "... only the fold differs (conv, bias and their 6 weights out)" grep -q "^3 added, 8 removed, 1 changed$" "$TMP/out"
expect "convert to a frozen GraphDef" 0 "wrote $S/frozen.pb \(pb, 19 nodes\)" -- "$GRAFT" convert --saved-model freeze "$SM" "$S/frozen.pb"
expect "... not in place: its variables would be lost" 1 "a SavedModel with variables is not written as a GraphDef file" -- "$GRAFT" convert "$SM" "$S/lost.pb"
expect "an unknown signature" 1 "saved_model.pb: error: no signature \`predict\`; the SavedModel's signatures: serving_default" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft --signature predict "$SM" -o "$S/nosig"
expect "an unknown tag" 1 "saved_model.pb: error: no MetaGraph tagged \`train\`; its MetaGraphs' tags: \[serve\]" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft --tag train "$SM" -o "$S/notag"
expect "--signature read in place" 2 "add --saved-model freeze" -- "$GRAFT" stats --signature serving_default "$SM"
expect "--signature on a GraphDef" 2 "this is not one" -- "$GRAFT" stats --signature serving_default "$EXAMPLE"
check "... nothing written by them" test ! -e "$S/lost.pb" -a ! -e "$S/nosig" -a ! -e "$S/notag"
expect "mem of the serving signature, frozen" 0 "" -- "$GRAFT" mem --batch 4 "$SM"
check "... over the inlined graph" grep -q "cnn: 19 nodes" "$TMP/out"
expect "cost of the serving signature, frozen" 0 "" -- "$GRAFT" cost --batch 4 "$SM"
check "... counts the conv inside it" grep -q "Conv2D .*sequential/conv2d/Conv2D" "$TMP/out"
expect "batch: a SavedModel beside a frozen graph, frozen" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$SM" "$EXAMPLE" -o "$S/batch"
check "... written without variables/" test -e "$S/batch/cnn/saved_model.pb" -a ! -e "$S/batch/cnn/variables"
mkdir -p "$S/zoo"; cp -rL "$SM" "$S/zoo/sm1"; cp -rL "$SM" "$S/zoo/sm2"; cp "$EXAMPLE" "$S/zoo/"
expect "review over SavedModels and a frozen graph" 0 "" -- "$GRAFT" review --base rules/tf/fold_batch_norms.graft --head-pipeline rules/pipelines/inference.yaml "$S/zoo"
check "... names the changed functions of both SavedModels" test "$(grep -c '^function __inference__wrapped_model_142: changed' "$TMP/out")" -eq 2
check "... and the frozen graph's nodes" grep -q "^== .*keras_cnn.pb" "$TMP/out"
expect "a function that calls itself" 1 "function \`f\` calls itself: f -> g -> f" -- "$GRAFT" validate tests/data/libraries/recursive.pbtxt
expect "... apply refuses it, naming the input" 1 "recursive.pbtxt: error: the function library: function \`f\` calls itself" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft tests/data/libraries/recursive.pbtxt -o "$S/rec.pbtxt"
expect "a call to a missing function" 1 "\`call\` calls function \`not_there\`, which the library does not hold" -- "$GRAFT" validate tests/data/libraries/missing_function.pbtxt
expect "... apply refuses it" 1 "missing_function.pbtxt: error: the function library: \`call\` calls function \`not_there\`" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft tests/data/libraries/missing_function.pbtxt -o "$S/miss.pbtxt"
check "... nothing written" test ! -e "$S/rec.pbtxt" -a ! -e "$S/miss.pbtxt"
bad_bundle() {  # name, then a command run in the copy's variables/
  rm -rf "$S/$1"; cp -rL "$SM" "$S/$1"; (cd "$S/$1/variables" && eval "$2")
}
bad_bundle no_index "rm variables.index"
expect "a shard without its index" 1 "variables.index: error: missing" -- "$GRAFT" convert "$S/no_index" "$S/out1"
bad_bundle short_index "head -c 300 variables.index > i && mv i variables.index"
expect "a truncated index" 1 "variables.index: error: not a valid TensorBundle index" -- "$GRAFT" convert "$S/short_index" "$S/out2"
bad_bundle no_shard "rm variables.data-00000-of-00001"
expect "a missing data shard" 1 "variables.data-00000-of-00001: error: missing" -- "$GRAFT" convert "$S/no_shard" "$S/out3"
bad_bundle short_shard "head -c 1000 variables.data-00000-of-00001 > d && mv d variables.data-00000-of-00001"
expect "a short data shard" 1 "variables.data-00000-of-00001: error: 1000 bytes, shorter than" -- "$GRAFT" convert "$S/short_shard" "$S/out4"
bad_bundle flipped "printf 'X' | dd of=variables.data-00000-of-00001 bs=1 seek=100 conv=notrunc status=none"
expect "validate checks every variable's checksum" 1 "fails its checksum" -- "$GRAFT" validate "$S/flipped"
check "... nothing written by any of them" test ! -e "$S/out1" -a ! -e "$S/out2" -a ! -e "$S/out3" -a ! -e "$S/out4"

# ONNX, the second dialect: the same commands; hostile models are located
# errors that write nothing; rules are for one dialect.
X=tests/data/onnx
XO="$TMP/onnx"
mkdir -p "$XO"
expect "ONNX: validate" 0 "" -- "$GRAFT" validate "$X/conv_bn.onnx"
check "... says valid" grep -q "conv_bn.onnx: valid" "$TMP/out"
expect "ONNX: a round trip" 0 "wrote $XO/copy.onnx \(onnx, " -- "$GRAFT" convert "$X/conv_bn.onnx" "$XO/copy.onnx"
check "... byte for byte" cmp -s "$X/conv_bn.onnx" "$XO/copy.onnx"
expect "ONNX text form: read" 0 "wrote $XO/from_text.onnx \(onnx, 11 nodes\)" -- "$GRAFT" convert "$X/conv_bn.onnxtxt" "$XO/from_text.onnx"
check "... the same model as the binary one, byte for byte" cmp -s "$X/conv_bn.onnx" "$XO/from_text.onnx"
expect "... and written" 0 "" -- "$GRAFT" convert "$X/conv_bn.onnx" "$XO/as_text.onnxtxt"
check "... as text" grep -q 'op_type: "BatchNormalization"' "$XO/as_text.onnxtxt"
printf 'ir_version: 8\ngraph {\n  nodes { op_type: "Relu" }\n}\n' > "$XO/bad.onnxtxt"
expect "... a text error, located" 1 "bad.onnxtxt:3:9: error: Message type \"onnx.GraphProto\" has no field named \"nodes\"" -- "$GRAFT" validate "$XO/bad.onnxtxt"
# Transformer fusions (rules/onnx/transformers/): one that does not apply says why.
expect "ONNX: explain a fusion that does not apply" 0 "" -- "$GRAFT" explain -r rules/onnx/transformers/layer_norm.graft tests/data/onnx/tfm_layer_norm_opset14.onnxtxt --node /ln/Add_11
check "... it says why" grep -q "layer_norm at \`/ln/Add_11\`: no match: guard \`opset() >= 17\` is false" "$TMP/out"
expect "ONNX: a fusion imports onnxruntime's domain" 0 "skip_layer_norm: 1 applied" -- "$GRAFT" apply -r rules/onnx/transformers/layer_norm.graft tests/data/onnx/tfm_skip_layer_norm.onnxtxt -o "$TMP/skip_ln.onnx"
expect "... and the result validates" 0 "" -- "$GRAFT" validate "$TMP/skip_ln.onnx"
# QDQ quantization: calibrated ranges by the model's value names.
expect "ONNX: QDQ with calibrated ranges" 0 "quantize_through_activation: 1 applied" -- "$GRAFT" apply -r rules/onnx/quantize_qdq.graft --param ranges=tests/data/onnx/qdq_cnn_ranges.yaml tests/data/onnx/qdq_cnn.onnxtxt -o "$TMP/qdq.onnx"
expect "... the result validates" 0 "" -- "$GRAFT" validate "$TMP/qdq.onnx"
printf '"x": [-1, 1]\n"nowhere": [0, 1]\n' > "$TMP/bad_ranges.yaml"
expect "ONNX: a range for a value the model lacks" 1 "bad_ranges.yaml:2:1: tensor \`nowhere\` is not a value of the model" -- "$GRAFT" apply -r rules/onnx/quantize_qdq.graft --param "ranges=$TMP/bad_ranges.yaml" tests/data/onnx/qdq_cnn.onnxtxt -o "$TMP/qdq_bad.onnx"
check "... nothing written" test ! -e "$TMP/qdq_bad.onnx"
expect "ONNX: fold a batch norm into Conv's bias" 0 "fold_conv_bias_batch_norm: 1 applied" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$X/conv_bn.onnx" -o "$XO/folded.onnx"
expect "... the diff names it" 0 "" -- "$GRAFT" diff "$X/conv_bn.onnx" "$XO/folded.onnx"
check "... BatchNormalization became the folded Conv" grep -q "op: BatchNormalization -> Conv" "$TMP/out"
expect "ONNX: TensorFlow's rules refused" 1 "its rules are for tensorflow graphs; this is an onnx graph" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$X/conv_bn.onnx" -o "$XO/tf.onnx"
expect "... and ONNX's on a GraphDef" 1 "its rules are for onnx graphs; this is a tensorflow graph" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$EXAMPLE" -o "$XO/onnx.pb"
expect "ONNX: truncated" 1 "truncated.onnx: error: not a valid ONNX model" -- "$GRAFT" convert "$X/truncated.onnx" "$XO/t.onnx"
expect "ONNX: an IR version graft does not read" 1 "ir99.onnx: error: IR version 99; graft reads ONNX IR versions 3 to 14" -- "$GRAFT" convert "$X/ir99.onnx" "$XO/i.onnx"
expect "ONNX: a missing external data file" 1 "onnx/weights.bin: error: missing \(the external data of tensor \`w\`; no such file" -- "$GRAFT" convert "$X/external.onnx" "$XO/e.onnx"
expect "... a tensor past its data file's end" 1 "external_ok.onnx.data: error: tensor \`w\` lies at bytes 100000 to 100432, past the file's end \(512 bytes\)" -- "$GRAFT" convert "$X/external_past_end.onnx" "$XO/e.onnx"
expect "... a location leaving the model's folder" 1 "external_escape.onnx: error: tensor \`w\`: external data location \`../external_ok.onnx.data\` leaves the model's folder" -- "$GRAFT" validate "$X/external_escape.onnx"
mkdir -p "$XO/ext"
expect "ONNX: external data, a round trip to another folder" 0 "wrote $XO/ext/copy.onnx" -- "$GRAFT" convert "$X/external_ok.onnx" "$XO/ext/copy.onnx"
check "... the model byte for byte" cmp -s "$X/external_ok.onnx" "$XO/ext/copy.onnx"
check "... its data file copied byte for byte" cmp -s "$X/external_ok.onnx.data" "$XO/ext/external_ok.onnx.data"
expect "... folded" 0 "fold_conv_bias_batch_norm: 1 applied" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$X/external_ok.onnx" -o "$XO/ext/folded.onnx"
check "... new weights under 1 KiB written in the model, not a data file" test ! -e "$XO/ext/folded.onnx.data"
check "... the original's data untouched" cmp -s "$X/external_ok.onnx.data" "$XO/ext/external_ok.onnx.data"
expect "ONNX: a value nothing produces" 1 "node \`relu\` \(Relu\) reads \`nowhere\`, which no node, input or initializer produces" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$X/unknown_value.onnx" -o "$XO/u.onnx"
expect "ONNX: nodes out of topological order" 1 "\`relu\` \(Relu\) reads \`z\`, which a later node writes: ONNX wants nodes in topological order" -- "$GRAFT" validate "$X/unsorted.onnx"
expect "... which convert writes in order" 0 "" -- "$GRAFT" convert "$X/unsorted.onnx" "$XO/sorted.onnx"
expect "... and then validates" 0 "" -- "$GRAFT" validate "$XO/sorted.onnx"
expect "ONNX: an input of a type its op does not take" 1 "input 0 of \`conv\` \(Conv\) is string, which its type T does not allow" -- "$GRAFT" validate "$X/string_input.onnx"
expect "ONNX: a subgraph reading the outer graph's values" 0 "" -- "$GRAFT" validate "$X/subgraph_ok.onnx"
expect "... one reading a value no scope has" 1 "subgraph_unknown.onnx: error: node \`if\` \(If\) attr \`then_branch\` reads \`nowhere\`, which neither the subgraph nor the graph around it produces" -- "$GRAFT" convert "$X/subgraph_unknown.onnx" "$XO/s.onnx"
check "... nothing written" test ! -e "$XO/s.onnx"
expect "ONNX: a cycle" 1 "the graph has a cycle: conv -> bn -> relu -> conv" -- "$GRAFT" validate "$X/cycle.onnx"
expect "... apply writes nothing" 1 "nothing written" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$X/cycle.onnx" -o "$XO/c.onnx"
check "... nothing written by any of them" test ! -e "$XO/tf.onnx" -a ! -e "$XO/onnx.pb" -a ! -e "$XO/t.onnx" -a ! -e "$XO/i.onnx" -a ! -e "$XO/e.onnx" -a ! -e "$XO/u.onnx" -a ! -e "$XO/c.onnx"
mkdir -p "$XO/zoo"; cp "$X/conv_bn.onnx" "$XO/zoo/a.onnx"; cp "$X/conv_bn.onnx" "$XO/zoo/b.onnx"
expect "ONNX: a batch over a folder" 0 "2 model\(s\): 2 rewritten" -- "$GRAFT" apply -r rules/onnx/fold_batch_norms.graft "$XO/zoo" -o "$XO/zoo_out"
check "... both written" test -e "$XO/zoo_out/a.onnx" -a -e "$XO/zoo_out/b.onnx"
printf 'dialect onnx\nrule r { match { c = Conv2D(x, w) } rewrite { replace c with x } }\n' > "$XO/tf_op.graft"
expect "an ONNX rule naming a TensorFlow op" 1 "unknown op \`Conv2D\`" -- "$GRAFT" check "$XO/tf_op.graft"
printf 'dialect onnx\nrule r { match { b = BatchNormalization(x, s, c, m, v) where b.alpha > 0 } rewrite { replace b with x } }\n' > "$XO/attr.graft"
expect "... an attr the op lacks" 1 "has no attr \`alpha\`" -- "$GRAFT" check "$XO/attr.graft"
printf 'dialect onnx\nrule r { match { c = Conv(x) } rewrite { replace c with x } }\n' > "$XO/count.graft"
expect "... too few operands" 1 "\`Conv\` takes 2 to 3 data input\(s\)" -- "$GRAFT" check "$XO/count.graft"
printf 'dialect caffe\n' > "$XO/dialect.graft"
expect "an unknown dialect" 1 "unknown dialect \`caffe\`" -- "$GRAFT" check "$XO/dialect.graft"

# Batch apply: a folder of models with a garbled and an unreadable one (both
# reported, the rest written, exit 1); shards cover every model once;
# resume; outputs identical to one model at a time.
Z="$TMP/zoo"
mkdir -p "$Z/sub"
cp $G/fold_bn_conv/in.pbtxt "$Z/a.pbtxt"
cp $G/fold_bn_lib_nchw_conv/in.pbtxt "$Z/sub/b.pbtxt"
cp "$EXAMPLE" "$Z/sub/c.pb"
cp $G/pattern_any_op/in.pbtxt "$Z/plain.pbtxt"
echo "garbage" > "$Z/garbled.pbtxt"
ln -s "$TMP/nowhere.pb" "$Z/unreadable.pb"
expect "batch with bad models" 1 "6 model\(s\): 3 rewritten, 1 unchanged, 0 up to date, 2 failed" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$Z" -o "$TMP/zoo_out" --report "$TMP/zoo.json" --jobs 2
check "the good models written" test -e "$TMP/zoo_out/a.pbtxt" -a -e "$TMP/zoo_out/sub/b.pbtxt" -a -e "$TMP/zoo_out/sub/c.pb" -a -e "$TMP/zoo_out/plain.pbtxt"
check "the bad ones not" test ! -e "$TMP/zoo_out/garbled.pbtxt" -a ! -e "$TMP/zoo_out/unreadable.pb"
check "the report lists each model" test "$(grep -c '"input":' "$TMP/zoo.json")" -ge 6
check "the garbled model's error" grep -qE "garbled.pbtxt:[0-9]+:[0-9]+: error" "$TMP/err"
"$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$G/fold_bn_conv/in.pbtxt" -o "$TMP/single_a.pbtxt"
check "batch output equals a single apply" cmp -s "$TMP/single_a.pbtxt" "$TMP/zoo_out/a.pbtxt"
expect "resume skips what is up to date" 1 "0 rewritten, 0 unchanged, 4 up to date, 2 failed" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$Z" -o "$TMP/zoo_out" --skip-unchanged
expect "shard 0/2" 0 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$Z" -o "$TMP/zoo_s0" --shard 0/2 --report "$TMP/s0.json"
expect "shard 1/2" 1 "" -- "$GRAFT" apply -q -r rules/tf/fold_batch_norms.graft "$Z" -o "$TMP/zoo_s1" --shard 1/2 --report "$TMP/s1.json"
check "the shards cover every model once" test "$(cat "$TMP/s0.json" "$TMP/s1.json" | grep -c '"input":')" -eq "$(grep -c '"input":' "$TMP/zoo.json")"
expect "report merge" 1 "6 model\(s\): 3 rewritten, 1 unchanged, 0 up to date, 2 failed" -- "$GRAFT" report merge "$TMP/s0.json" "$TMP/s1.json" -o "$TMP/merged.json"
expect "a bad shard" 2 "expected i/n with 0 <= i < n" -- "$GRAFT" apply -r rules/tf/fold_batch_norms.graft "$Z" -o "$TMP/zoo_s9" --shard 2/2

# Reviewing a rule change: none, one that stops a fold, one that adds a
# rewrite.
expect "review of an unchanged rule set" 0 "" -- "$GRAFT" review --base rules/tf/fold_batch_norms.graft --head rules/tf/fold_batch_norms.graft "$Z/a.pbtxt" "$Z/sub" "$EXAMPLE"
check "says so in one line" test "$(cat "$TMP/out")" = "The change alters none of the 4 model(s)."
sed -e 's|import "fold_constants.graft"|import "'"$(pwd)"'/rules/tf/fold_constants.graft"|' \
    -e 's|    where bn.is_training == false and uses(conv) == 1 and uses(bias) == 1|    where bn.is_training == false and uses(conv) == 1 and uses(bias) == 1 and not name_matches(bn, ".*_1/.*")|' \
    rules/tf/fold_batch_norms.graft > "$TMP/fold_fewer.graft"
expect "review of a change that stops a fold" 0 "" -- "$GRAFT" review --base rules/tf/fold_batch_norms.graft --head "$TMP/fold_fewer.graft" "$Z/a.pbtxt" "$EXAMPLE" --report "$TMP/review.json"
check "the affected model named" grep -q "^== $EXAMPLE" "$TMP/out"
check "and its rewrites" grep -q "fold_fused_batch_norm: 4 -> 3" "$TMP/out"
check "the other model unchanged" test "$(grep -c '^== ' "$TMP/out")" -eq 1
check "the node named" grep -q "keras_cnn/batch_normalization_1/FusedBatchNormV3" "$TMP/out"
check "the JSON report" grep -q '"differs": true' "$TMP/review.json"
expect "review of a change that adds a rewrite, as markdown" 0 "" -- "$GRAFT" review --base "$TMP/fold_fewer.graft" --head rules/tf/fold_batch_norms.graft "$EXAMPLE" --format markdown
check "the markdown table" grep -q "| \`$EXAMPLE\` | 41 -> 33 | Identity -5, Const -3, BiasAdd +1, FusedBatchNormV3 -1 | drop_control_from_folded_read: 16 -> 21, fold_fused_batch_norm: 3 -> 4 | 42.3 KiB -> 42.1 KiB (-222 B) | same |" "$TMP/out"
check "no node-level diff without --full" bash -c "! grep -q '^- keras_cnn' \"$TMP/out\""
expect "the markdown review, --full" 0 "" -- "$GRAFT" review --base "$TMP/fold_fewer.graft" --head rules/tf/fold_batch_norms.graft "$EXAMPLE" --format markdown --full
check "the node-level diff folded under the table" grep -q "^<details><summary><code>$EXAMPLE</code>: 3 added, 11 removed, 2 changed</summary>" "$TMP/out"
expect "review as one html page" 0 "" -- "$GRAFT" review --base "$TMP/fold_fewer.graft" --head rules/tf/fold_batch_norms.graft "$EXAMPLE" --format html
check "with the drawing" grep -q "<svg" "$TMP/out"
check "the text review ends with a summary" bash -c "\"$GRAFT\" review --base rules/tf/fold_batch_norms.graft --head \"$TMP/fold_fewer.graft\" \"$EXAMPLE\" | tail -1 | grep -q '^Summary: the change alters 1 of 1 model(s); rewrites drop_control_from_folded_read: 21 -> 16, fold_fused_batch_norm: 4 -> 3.$'"
check "a long diff is cut with a count" bash -c "\"$GRAFT\" review --base rules/tf/fold_batch_norms.graft --head rules/tf/gtt/obfuscate_names.graft tests/data/convnet_train.pb | grep -qE '^\\.\\.\\. [0-9]+ more line\\(s\\) of this diff \\(--full shows all\\)$'"
check "--full shows it all" bash -c "! \"$GRAFT\" review --full --base rules/tf/fold_batch_norms.graft --head rules/tf/gtt/obfuscate_names.graft tests/data/convnet_train.pb | grep -q 'more line(s) of this diff'"

# Models a review cannot read are listed as failed in every format, and
# the review exits 1.
RV="$TMP/review_zoo"
mkdir -p "$RV"
cp "$EXAMPLE" "$RV/good.pb"
: > "$RV/empty.pb"
head -c 500 "$EXAMPLE" > "$RV/truncated.pb"
for format in text markdown html; do
  expect "review with unreadable models ($format)" 1 "review: 2 model\(s\) failed" -- "$GRAFT" review --base rules/tf/fold_batch_norms.graft --head "$TMP/fold_fewer.graft" "$RV" --format $format
  check "... names the empty one ($format)" grep -q "empty.pb" "$TMP/out"
  check "... and the truncated one ($format)" grep -q "truncated.pb" "$TMP/out"
done
check "... with their errors" grep -q "2 model(s) failed" "$TMP/out"

# graft diff compares control inputs as a set: reordering them is no change.
printf 'node { name: "a" op: "NoOp" }\nnode { name: "b" op: "NoOp" }\nnode { name: "c" op: "NoOp" input: "^a" input: "^b" }\n' > "$TMP/ctl1.pbtxt"
printf 'node { name: "a" op: "NoOp" }\nnode { name: "b" op: "NoOp" }\nnode { name: "c" op: "NoOp" input: "^b" input: "^a" }\n' > "$TMP/ctl2.pbtxt"
expect "reordered control inputs are no difference" 0 "" -- "$GRAFT" diff --exit-code "$TMP/ctl1.pbtxt" "$TMP/ctl2.pbtxt"
printf 'node { name: "a" op: "NoOp" }\nnode { name: "b" op: "NoOp" }\nnode { name: "c" op: "NoOp" input: "^b" }\n' > "$TMP/ctl3.pbtxt"
expect "a removed control input is one" 1 "" -- "$GRAFT" diff --exit-code "$TMP/ctl1.pbtxt" "$TMP/ctl3.pbtxt"
check "... named as such" grep -q 'control input `^a` removed' "$TMP/out"

# The Graph Transform Tool's --transforms strings, and as a pipeline file.
G=tests/golden/gtt_remove_nodes/in.pbtxt
expect "apply --transforms" 0 "" -- "$GRAFT" apply --transforms 'remove_nodes(op=Identity, op=CheckNumerics) strip_unused_nodes(type=float)' --outputs out "$G" -o "$TMP/gtt.pbtxt"
check "Identity and CheckNumerics removed" test "$(grep -c 'op: "CheckNumerics"' "$TMP/gtt.pbtxt")" -eq 0
check "the output kept" grep -q 'name: "out"' "$TMP/gtt.pbtxt"
check "an unneeded param said" grep -q "strip_unused_nodes: .type. changes nothing" "$TMP/err"
expect "sort_by_execution_order" 0 "" -- "$GRAFT" apply --transforms sort_by_execution_order tests/golden/gtt_sort_by_execution_order/in.pbtxt -o "$TMP/sorted.pbtxt"
check "nodes written after their inputs" test "$(grep -o 'name: "[a-z]*"' "$TMP/sorted.pbtxt" | tr -d '\n')" = 'name: "gate"name: "x"name: "r"name: "out"'
"$GRAFT" convert tests/golden/gtt_sort_by_execution_order/in.pbtxt "$TMP/unsorted.pb" >/dev/null 2>&1
expect "sort_by_execution_order, binary" 0 "" -- "$GRAFT" apply --transforms 'rename_node(old_node_name=r, new_node_name=q) sort_by_execution_order' "$TMP/unsorted.pb" -o "$TMP/sorted.pb"
"$GRAFT" convert "$TMP/sorted.pb" "$TMP/sorted_pb.pbtxt" >/dev/null 2>&1
check "binary output in execution order" test "$(grep -o 'name: "[a-z]*"' "$TMP/sorted_pb.pbtxt" | tr -d '\n')" = 'name: "gate"name: "x"name: "q"name: "out"'
FR=tests/golden/gtt_freeze_requantization_ranges
expect "freeze_requantization_ranges needs its log" 1 "min_max_log_file: give the log" -- "$GRAFT" apply --transforms freeze_requantization_ranges $FR/in.pbtxt -o "$TMP/frozen.pbtxt"
expect "a log naming a node the graph lacks" 1 "logs \`conv/requant_range\`, which is not in the graph" -- "$GRAFT" apply --transforms "freeze_requantization_ranges(min_max_log_file=$FR/min_max.log)" tests/golden/gtt_rename_op/in.pbtxt -o "$TMP/frozen.pbtxt"
check "nothing written for a bad log" test ! -e "$TMP/frozen.pbtxt"
expect "pipeline --from-transforms" 0 "wrote $TMP/gtt.yaml" -- "$GRAFT" pipeline --from-transforms 'remove_nodes(op=Identity, op=CheckNumerics) strip_unused_nodes(type=float)' --outputs out -o "$TMP/gtt.yaml"
check "the pipeline's steps" grep -q 'params: {op: "Identity|CheckNumerics", outputs: "out"}' "$TMP/gtt.yaml"
expect "the pipeline applies" 0 "" -- "$GRAFT" apply --pipeline "$TMP/gtt.yaml" "$G" -o "$TMP/gtt2.pbtxt"
check "to the same graph" cmp "$TMP/gtt.pbtxt" "$TMP/gtt2.pbtxt"

# Attrs named by an expression: `set n[name] = v`, `unset n[name]`.
printf 'param a: string = "_class"\nrule r {\n  match {\n    n = Relu\n    where has_attr(n, a)\n  }\n  rewrite {\n    unset n[3]\n  }\n}\n' > "$TMP/unset_bad.graft"
expect "unset n[3] is a compile error" 1 "unset_bad.graft:8:13: error: expected the attr's name, a string, not an int" -- "$GRAFT" check "$TMP/unset_bad.graft"
printf 'rule r {\n  match {\n    n = Relu\n  }\n  rewrite {\n    unset n[\n  }\n}\n' > "$TMP/unset_syntax.graft"
expect "unset n[ is a located syntax error" 1 "unset_syntax.graft:7:3: error: expected the attr's name, an expression" -- "$GRAFT" check "$TMP/unset_syntax.graft"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
