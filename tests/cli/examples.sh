#!/usr/bin/env bash
# Runs the example programs (apps/examples) on a slice of MNIST and checks what each
# prints: the MLP's run saved and reloaded by predict_labels, the CNN's test accuracy, the
# custom layer's gate moved by training, both heads of the two-input model, and the MLP
# exported by `glia export` and called from C (classify.c) with the JIT's accuracy. Skips
# (77) without MNIST.
#   examples.sh BUILD_DIR_OF_THE_EXAMPLES GLIA_TOOL CLASSIFY_C
set -u
bin=$1
glia=$2
classify_c=$3
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
acc_mlp=$acc
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
run pairs.log "$bin/two_digits" "$data" 6000
line=$(grep "^test accuracy: sum" "$dir/pairs.log") || fail "no accuracy in $(tail -3 "$dir/pairs.log")"
sum=$(sed -n 's/.*sum \([0-9.e-]*\),.*/\1/p' <<< "$line")
left=$(sed -n 's/.*left digit \([0-9.e-]*\)$/\1/p' <<< "$line")
at_least "$sum" 0.50 "two_digits' sum accuracy"
at_least "$left" 0.85 "two_digits' left-digit accuracy"
grep -q "shares dense_0" "$dir/pairs.log" || fail "two_digits' summary shows no shared encoder"

# Example 6: the MLP of example 1, exported and called from C.
run export.log "$glia" export --checkpoint "$dir/mlp.h5" --name mnist_mlp --batch 1 \
  --output "$dir/mnist"
cc=${CC:-cc}
run cc.log "$cc" -O2 -std=c11 -Wall "$classify_c" -I "$dir/mnist" -L "$dir/mnist" -lmnist_mlp \
  -Wl,-rpath,"$dir/mnist" -o "$dir/classify"
for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [[ -e $data/$f ]]; then cp "$data/$f" "$dir/$f"; else gunzip -c "$data/$f.gz" > "$dir/$f"; fi
done
run classify.log "$dir/classify" "$dir/t10k-images-idx3-ubyte" "$dir/t10k-labels-idx1-ubyte"
c_acc=$(sed -n 's/^accuracy \([0-9.]*\) on 10000 images$/\1/p' "$dir/classify.log")
[[ -n $c_acc ]] || fail "no accuracy from classify: $(tail -2 "$dir/classify.log")"
# The loop validated on the same 10,000 images: the C library classifies them alike.
awk -v a="$c_acc" -v b="$acc_mlp" 'BEGIN { d = a - b; exit !(d < 0.0006 && d > -0.0006) }' ||
  fail "classify's accuracy $c_acc differs from the JIT's $acc_mlp"
echo "ok: every example ran"
