#!/usr/bin/env bash
# Untrusted models (docs/security.md): a model that names files outside its
# folder through links, special files where data should be, and output
# folders with links planted in them. Each refused case ends with exit
# status 1, a message naming the file, nothing written, and no byte of the
# file outside in any output; the layouts that must keep working (the
# Hugging Face hub cache, links inside a model's folder) load, convert and
# fold.
set -u
GRAFT="${TEST_SRCDIR}/graft/cli/graft"
ROOT="$PWD"
X="$ROOT/tests/data/onnx"
SM="$ROOT/tests/data/saved_models/cnn"
FOLD="$ROOT/rules/onnx/fold_batch_norms.graft"
FOLD_TF="$ROOT/rules/tf/fold_batch_norms.graft"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/hostile"
rm -rf "$WORK"
mkdir -p "$WORK"
passed=0
failed=0
SECRET="GRAFT-SECRET-$(date +%s%N)-do-not-leak"

ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# `refused NAME PATTERN -- COMMAND...`: exit 1 within 10 s, the message
# (stderr, or a review's listing) matches,
# no new file anywhere under $WORK/out, the secret in no file written.
refused() {
  local name="$1" pattern="$2"
  shift 3
  rm -rf "$WORK/out" && mkdir -p "$WORK/out"
  timeout 10 "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local rc=$?
  if [[ $rc -ne 1 ]]; then bad "$name" "exit $rc, want 1: $(head -c 400 "$WORK/stderr")"; return; fi
  if ! cat "$WORK/stderr" "$WORK/stdout" | grep -qE -- "$pattern"; then bad "$name" "stderr does not match /$pattern/: $(head -c 400 "$WORK/stderr")"; return; fi
  if [[ -n "$(ls -A "$WORK/out")" ]]; then bad "$name" "wrote $(ls -A "$WORK/out")"; return; fi
  if grep -rqF "$SECRET" "$WORK/stdout" "$WORK/stderr"; then bad "$name" "the secret leaked"; return; fi
  ok "$name"
}

# `works NAME -- COMMAND...`: exit 0 within 10 s.
works() {
  local name="$1"
  shift 2
  timeout 10 "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local rc=$?
  if [[ $rc -ne 0 ]]; then bad "$name" "exit $rc: $(head -c 400 "$WORK/stderr")"; return; fi
  ok "$name"
}

# A secret outside every model's folder, as big as the data file it stands
# in for (so that only the folder check can refuse it).
mkdir -p "$WORK/elsewhere"
size=$(stat -c %s "$X/external_ok.onnx.data")
python3 -c "import sys; s=sys.argv[1].encode(); open(sys.argv[2],'wb').write((s * (int(sys.argv[3]) // len(s) + 1))[:int(sys.argv[3])])" \
  "$SECRET" "$WORK/elsewhere/secret.bin" "$size"

# ---- ONNX: the data file a link out of the folder ----
M="$WORK/linked_file"
mkdir -p "$M"
cp "$X/external_ok.onnx" "$M/m.onnx"
ln -s "$WORK/elsewhere/secret.bin" "$M/external_ok.onnx.data"
WHY="external_ok.onnx.data: error: the external data of tensor .* resolves to .*elsewhere/secret.bin, outside the model's folder"
for cmd in validate stats; do
  refused "onnx linked data file: $cmd" "$WHY" -- "$GRAFT" "$cmd" "$M/m.onnx"
done
refused "onnx linked data file: convert" "$WHY" -- "$GRAFT" convert "$M/m.onnx" "$WORK/out/m.onnx"
refused "onnx linked data file: apply" "$WHY" -- "$GRAFT" apply -r "$FOLD" "$M/m.onnx" -o "$WORK/out/m.onnx"
refused "onnx linked data file: review" "$WHY" -- "$GRAFT" review --base "$FOLD" --head "$FOLD" "$M"

# ---- ONNX: a folder on the data's way linked out (`sub/...`, sub -> ..) ----
M="$WORK/linked_folder"
mkdir -p "$M" "$WORK/elsewhere/sub"
cp "$X/external_sub.onnx" "$M/m.onnx"
cp "$WORK/elsewhere/secret.bin" "$WORK/elsewhere/sub/external_ok.onnx.data"
ln -s "$WORK/elsewhere/sub" "$M/sub"
refused "onnx linked folder: convert" "sub/external_ok.onnx.data: error: .*outside the model's folder" \
  -- "$GRAFT" convert "$M/m.onnx" "$WORK/out/m.onnx"
M2="$WORK/dotdot_link"
mkdir -p "$M2/inner"
cp "$X/external_sub.onnx" "$M2/inner/m.onnx"
cp "$WORK/elsewhere/secret.bin" "$M2/external_ok.onnx.data"
ln -s .. "$M2/inner/sub"  # `..` through a link
refused "onnx .. through a link: stats" "outside the model's folder" -- "$GRAFT" stats "$M2/inner/m.onnx"

# ---- ONNX: a FIFO as the data file (refused, never waited on) ----
M="$WORK/fifo"
mkdir -p "$M"
cp "$X/external_ok.onnx" "$M/m.onnx"
mkfifo "$M/external_ok.onnx.data"
refused "onnx FIFO data file" "external_ok.onnx.data: error: .*not a regular file" -- "$GRAFT" validate "$M/m.onnx"

# ---- ONNX: layouts that keep working ----
HUB="$WORK/hub/models--org--m"
mkdir -p "$HUB/blobs" "$HUB/snapshots/abc123"
cp "$X/external_ok.onnx" "$HUB/blobs/1111"
cp "$X/external_ok.onnx.data" "$HUB/blobs/2222"
ln -s ../../blobs/1111 "$HUB/snapshots/abc123/m.onnx"
ln -s ../../blobs/2222 "$HUB/snapshots/abc123/external_ok.onnx.data"
mkdir -p "$WORK/hub_out" "$WORK/inside_out"
works "hub cache layout: validate" -- "$GRAFT" validate "$HUB/snapshots/abc123/m.onnx"
works "hub cache layout: convert" -- "$GRAFT" convert "$HUB/snapshots/abc123/m.onnx" "$WORK/hub_out/m.onnx"
if cmp -s "$X/external_ok.onnx.data" "$WORK/hub_out/external_ok.onnx.data"; then ok "... its data copied"; else bad "... its data copied" "differs"; fi
works "hub cache layout: fold" -- "$GRAFT" apply -r "$FOLD" "$HUB/snapshots/abc123/m.onnx" -o "$WORK/hub_out/f.onnx"
M="$WORK/link_inside"
mkdir -p "$M/sub"
cp "$X/external_sub.onnx" "$M/m.onnx"
cp "$X/external_ok.onnx.data" "$M/data.bin"
ln -s ../data.bin "$M/sub/external_ok.onnx.data"
works "a link inside the model's folder" -- "$GRAFT" convert "$M/m.onnx" "$WORK/inside_out/m.onnx"

# ---- SavedModel: a variables shard or index linked out ----
for part in variables.data-00000-of-00001 variables.index; do
  M="$WORK/sm_$part"
  cp -rL "$SM" "$M"
  cp "$M/variables/$part" "$WORK/elsewhere/$part"
  rm "$M/variables/$part"
  ln -s "$WORK/elsewhere/$part" "$M/variables/$part"
  refused "SavedModel linked $part: validate" "variables/$part: error: .*outside the model's folder" \
    -- "$GRAFT" validate "$M"
  refused "SavedModel linked $part: apply" "variables/$part: error: .*outside the model's folder" \
    -- "$GRAFT" apply -r "$FOLD_TF" "$M" -o "$WORK/out/sm"
done
M="$WORK/sm_asset"
cp -rL "$SM" "$M"
mkdir -p "$M/assets"
ln -s "$WORK/elsewhere/secret.bin" "$M/assets/vocab.txt"
refused "SavedModel linked asset: convert" "assets/vocab.txt: error: .*outside the model's folder" \
  -- "$GRAFT" convert "$M" "$WORK/out/sm"
M="$WORK/sm_loop"
cp -rL "$SM" "$M"
mkdir -p "$M/assets"
ln -s .. "$M/assets/loop"
refused "SavedModel asset folder holding itself" "link loop" -- "$GRAFT" convert "$M" "$WORK/out/sm"

# ---- a model found in a folder that is a link out of it (a pull request
# adding `models/evil.onnx -> ~/secret`) ----
PR="$WORK/pr_models"
mkdir -p "$PR"
cp "$X/conv_bn.onnx" "$PR/good.onnx"
ln -s "$WORK/elsewhere/secret.bin" "$PR/evil.onnx"
refused "review: a model linked out of its folder" "evil.onnx: error: a link to .*elsewhere/secret.bin, outside the folder" \
  -- "$GRAFT" review --base "$FOLD" --head "$FOLD" "$PR"
timeout 10 "$GRAFT" apply -r "$FOLD" "$PR" -o "$WORK/pr_out" >"$WORK/stdout" 2>"$WORK/stderr"
rc=$?
if [[ $rc -eq 1 && -f "$WORK/pr_out/good.onnx" && ! -e "$WORK/pr_out/evil.onnx" ]] &&
   grep -q "evil.onnx: error: a link to" "$WORK/stderr"; then
  ok "batch: the linked model fails, the others are written"
else
  bad "batch: a model linked out of its folder" "exit $rc: $(head -c 400 "$WORK/stderr")"
fi
if grep -qF "$SECRET" "$WORK/stdout" "$WORK/stderr"; then bad "... the secret in no message" "leaked"; else ok "... the secret in no message"; fi

# ---- outputs: links planted in the output folder ----
IN="$WORK/batch_in"
mkdir -p "$IN/sub"
cp "$ROOT/tests/data/control_devices.pb" "$IN/sub/m.pb"
cp "$ROOT/tests/data/control_devices.pb" "$IN/top.pb"
OUT="$WORK/batch_out"
mkdir -p "$OUT" "$WORK/elsewhere/planted"
ln -s "$WORK/elsewhere/planted" "$OUT/sub"
echo "keep me" > "$WORK/elsewhere/target.pb"
ln -s "$WORK/elsewhere/target.pb" "$OUT/top.pb"
timeout 10 "$GRAFT" apply -r "$FOLD_TF" "$IN" -o "$OUT" >"$WORK/stdout" 2>"$WORK/stderr"
rc=$?
if [[ $rc -eq 1 ]] && grep -q "outside the output folder" "$WORK/stderr"; then ok "batch: a folder linked out of -o fails that model"; else bad "batch: linked folder" "exit $rc: $(head -c 400 "$WORK/stderr")"; fi
if [[ -z "$(ls -A "$WORK/elsewhere/planted")" ]]; then ok "... nothing written through the link"; else bad "... nothing written through the link" "$(ls "$WORK/elsewhere/planted")"; fi
if [[ "$(cat "$WORK/elsewhere/target.pb")" == "keep me" && -f "$OUT/top.pb" && ! -L "$OUT/top.pb" ]]; then
  ok "... a link at an output's name is replaced, its target untouched"
else
  bad "... a link at an output's name" "target or output wrong"
fi
DATA_OUT="$WORK/data_out"
mkdir -p "$DATA_OUT"
echo "keep me" > "$WORK/elsewhere/data_target"
ln -s "$WORK/elsewhere/data_target" "$DATA_OUT/external_ok.onnx.data"
works "ONNX output: a link at the data file's name" -- "$GRAFT" convert "$X/external_ok.onnx" "$DATA_OUT/copy.onnx"
if [[ "$(cat "$WORK/elsewhere/data_target")" == "keep me" && ! -L "$DATA_OUT/external_ok.onnx.data" ]]; then
  ok "... replaced, its target untouched"
else
  bad "... replaced, its target untouched" "the data went through the link"
fi

# ---- ATen graph files: cut short, empty, not a GraphDef ----
A="$WORK/aten"
mkdir -p "$A"
printf 'node {\n  name: "x"\n  op: "Placeholder"\n}\nnode {\n  name: "r"\n  op: "aten.relu.default"\n  input: "x' >"$A/cut.aten.pbtxt"
: >"$A/empty.aten.pb"
printf '\x0b\x01\x02\x03garbage' >"$A/garbage.aten.pb"
refused "aten text cut short" "cut.aten.pbtxt:[0-9]+:[0-9]+: error" -- \
  "$GRAFT" apply -r "$ROOT/rules/aten/fold_batch_norms.graft" "$A/cut.aten.pbtxt" -o "$WORK/out/f.aten.pbtxt"
refused "aten binary empty" "empty.aten.pb: error: is empty" -- \
  "$GRAFT" apply -r "$ROOT/rules/aten/fold_batch_norms.graft" "$A/empty.aten.pb" -o "$WORK/out/f.aten.pb"
refused "aten binary garbage" "garbage.aten.pb: error: not a valid binary GraphDef" -- \
  "$GRAFT" stats "$A/garbage.aten.pb"

# No output holds the secret (grep -r follows no link).
if grep -rlF "$SECRET" "$WORK/hub_out" "$WORK/inside_out" "$OUT" "$DATA_OUT" | grep -q .; then
  bad "the secret in no output" "$(grep -rlF "$SECRET" "$WORK/hub_out" "$WORK/inside_out" "$OUT" "$DATA_OUT" | head -3)"
else
  ok "the secret in no output"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
