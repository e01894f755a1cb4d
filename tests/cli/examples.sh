#!/usr/bin/env bash
# Runs the example programs (apps/examples) on a slice of MNIST and checks what each
# prints: the MLP's run saved and reloaded by predict_labels, the CNN's test accuracy, the
# custom layer's gate moved by training. Skips (77) without MNIST.
#   examples.sh BUILD_DIR_OF_THE_EXAMPLES
set -u
bin=$1
source "$(dirname "$0")/need_mnist.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() {  # LOG PROGRAM ARGS...
  local log=$1
  shift
  "$@" > "$dir/$log" 2>&1 || { cat "$dir/$log"; fail "$*"; }
}
at_least() {  # VALUE MIN WHAT
  awk -v v="$1" -v m="$2" 'BEGIN { exit !(v >= m) }' || fail "$3: $1 < $2"
}
run mlp.log "$bin/mnist_mlp" "$data" 6000 "$dir/mlp.h5"
acc=$(sed -n 's/.*validation accuracy \([0-9.e-]*\),.*/\1/p' "$dir/mlp.log")
[[ -n $acc ]] || fail "no validation accuracy in $(tail -3 "$dir/mlp.log")"
at_least "$acc" 0.90 "mnist_mlp's validation accuracy"
[[ -s $dir/mlp.h5 ]] || fail "mnist_mlp saved no checkpoint"

run predict.log "$bin/predict_labels" "$dir/mlp.h5" "$data" 50
right=$(sed -n 's/^\([0-9]*\) of 50 right$/\1/p' "$dir/predict.log")
[[ -n $right ]] || fail "no count in $(tail -2 "$dir/predict.log")"
((right >= 40)) || fail "predict_labels: only $right of 50 right"
"$bin/predict_labels" "$dir/none.h5" "$data" > "$dir/missing.log" 2>&1 &&
  fail "predict_labels ran on a missing checkpoint"
grep -q "none.h5" "$dir/missing.log" || fail "the error names no file: $(cat "$dir/missing.log")"

run cnn.log "$bin/mnist_cnn" "$data" 6000
acc=$(sed -n 's/^test accuracy \([0-9.e-]*\)$/\1/p' "$dir/cnn.log")
[[ -n $acc ]] || fail "no test accuracy in $(tail -3 "$dir/cnn.log")"
at_least "$acc" 0.85 "mnist_cnn's test accuracy"

run gate.log "$bin/custom_layer" "$data" 3000
line=$(grep "gate values from" "$dir/gate.log") || fail "no gate line in $(tail -3 "$dir/gate.log")"
lo=$(sed -n 's/.*gate values from \([-0-9.e]*\) to.*/\1/p' <<< "$line")
hi=$(sed -n 's/.* to \([-0-9.e]*\) (.*/\1/p' <<< "$line")
awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(a < 2 || b > 2) }' || fail "the gate did not train: $line"
echo "ok: every example ran"
