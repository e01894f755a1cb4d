#!/usr/bin/env bash
# `glia train --model-json`: an architecture taken out of a checkpoint (glia summary
# --architecture), changed (64 hidden units instead of 128: no built-in model) and trained
# for one epoch on MNIST reaches 90% test accuracy; a missing file, text that is not a
# model, and an input that MNIST's images cannot fill are errors naming the problem.
# Skips (77) without MNIST.
#   model_json.sh GLIA_BINARY
set -u
glia=$1
source "$(dirname "$0")/need_mnist.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_failure() {  # TEXT ARGS...: glia fails and says TEXT
  local text=$1
  shift
  local out
  if out=$("$glia" "$@" 2>&1); then fail "glia $* succeeded: $out"; fi
  grep -qF -- "$text" <<< "$out" || fail "glia $* did not say '$text': $out"
}

"$glia" train --data-dir "$data" --epochs 1 --checkpoint "$dir/m.h5" > "$dir/first.log" 2>&1 ||
  { cat "$dir/first.log"; fail "the first training run"; }
"$glia" summary --checkpoint "$dir/m.h5" --architecture "$dir/mlp.json" > /dev/null ||
  fail "glia summary --architecture"
grep -q '"units":128' "$dir/mlp.json" || fail "no 128-unit dense layer in $(cat "$dir/mlp.json")"
sed 's/"units":128/"units":64/' "$dir/mlp.json" > "$dir/mlp64.json"
out=$("$glia" train --model-json "$dir/mlp64.json" --data-dir "$data" --epochs 1 \
  --checkpoint "$dir/m64.h5" --json 2>&1) || { echo "$out"; fail "training the JSON model"; }
accuracy=$(tail -1 <<< "$out" | sed -n 's/.*"test_accuracy":\([0-9.e-]*\).*/\1/p')
[[ -n $accuracy ]] || fail "no test_accuracy in: $(tail -1 <<< "$out")"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.90) }' || fail "test accuracy $accuracy < 0.90"
"$glia" summary --checkpoint "$dir/m64.h5" | grep -q "Total parameters: 50890" ||
  fail "the trained checkpoint does not hold the 64-unit model"

expect_failure "cannot read '$dir/none.json'" train --model-json "$dir/none.json" --data-dir "$data"
echo "not json" > "$dir/bad.json"
expect_failure "--model-json $dir/bad.json" train --model-json "$dir/bad.json" --data-dir "$data"
sed 's/"shape":\[-1,784\]/"shape":[-1,100]/' "$dir/mlp.json" > "$dir/small.json"
expect_failure "the examples have 784 values each" train --model-json "$dir/small.json" \
  --data-dir "$data"
expect_failure "excludes" train --model-json "$dir/mlp.json" --model cnn --data-dir "$data"
echo "ok: the JSON model trained to $accuracy"
