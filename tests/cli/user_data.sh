#!/usr/bin/env bash
# glia train on the user's own data: a CSV of 4 features and 3 separable classes, and the
# same as an .npz where numpy is installed, through the MLP's JSON architecture resized (4 ->
# 16 relu -> 3 softmax); the held-out sixth is classified well. Bad flags are errors.
#   user_data.sh GLIA_BINARY
set -u
glia=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Class c has feature c raised by 3, the rest noise from a fixed generator.
awk 'BEGIN { srand(7); print "f0,f1,f2,f3,species";
  for (i = 0; i < 600; i++) { c = i % 3; printf "%.4f,%.4f,%.4f,%.4f,%d\n",
    rand() + 3 * (c == 0), rand() + 3 * (c == 1), rand() + 3 * (c == 2), rand(), c } }' \
  > "$dir/d.csv"
# The built-in MLP's architecture, resized: 4 inputs, 16 hidden units, 3 classes.
"$glia" summary --model mlp --architecture "$dir/mlp.json" > /dev/null || fail "glia summary"
sed 's/"shape":\[-1,784\]/"shape":[-1,4]/; s/"units":128/"units":16/; s/"units":10,/"units":3,/' \
  "$dir/mlp.json" > "$dir/m.json"
grep -q '"units":3,' "$dir/m.json" || fail "no 3-unit layer in $(cat "$dir/m.json")"
accuracy() {  # LOG: the test accuracy of glia train --json's last line
  sed -n 's/.*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$1" | tail -1
}
"$glia" train --dataset csv --data "$dir/d.csv" --label species --model-json "$dir/m.json" \
  --epochs 5 --batch-size 16 --learning-rate 0.01 --json > "$dir/csv.log" 2>&1 ||
  { cat "$dir/csv.log"; fail "training on the CSV"; }
a=$(accuracy "$dir/csv.log")
awk -v a="$a" 'BEGIN { exit !(a >= 0.95) }' || fail "CSV test accuracy '$a' < 0.95"
if /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
  /usr/bin/python3 - "$dir" << 'PY' || fail "numpy could not write the npz"
import sys, numpy as np
d = np.loadtxt(sys.argv[1] + "/d.csv", delimiter=",", skiprows=1)
x, y = d[:, :4].astype(np.float32), d[:, 4].astype(np.int64)
np.savez_compressed(sys.argv[1] + "/d.npz", x=x[:500], y=y[:500], x_test=x[500:], y_test=y[500:])
PY
  "$glia" train --dataset npz --data "$dir/d.npz" --model-json "$dir/m.json" --epochs 5 \
    --batch-size 16 --learning-rate 0.01 --json > "$dir/npz.log" 2>&1 ||
    { cat "$dir/npz.log"; fail "training on the npz"; }
  a=$(accuracy "$dir/npz.log")
  awk -v a="$a" 'BEGIN { exit !(a >= 0.95) }' || fail "npz test accuracy '$a' < 0.95"
else
  echo "note: no numpy, the npz run is left out"
fi
# A NaN feature: the run halts at the batch holding it, names the step, and exits 1.
awk -F, 'NR == 101 { $2 = "nan" } 1' OFS=, "$dir/d.csv" > "$dir/nan.csv"
if "$glia" train --dataset csv --data "$dir/nan.csv" --label species --model-json "$dir/m.json" \
  --epochs 2 --batch-size 16 > "$dir/nan.log" 2>&1; then
  fail "training on a NaN feature succeeded: $(cat "$dir/nan.log")"
fi
grep -q "error: training halted: the loss is nan at epoch 1, iteration [0-9]* (step [0-9]*)" \
  "$dir/nan.log" || fail "no halt message: $(cat "$dir/nan.log")"
grep -q "test accuracy" "$dir/nan.log" && fail "a halted run evaluated the model"
"$glia" train --dataset csv --data "$dir/nan.csv" --label species --model-json "$dir/m.json" \
  --epochs 1 --batch-size 16 --keep-on-nan > "$dir/nan.log" 2>&1 ||
  fail "--keep-on-nan stopped: $(cat "$dir/nan.log")"
expect_failure() {  # TEXT ARGS...
  local text=$1
  shift
  local out
  if out=$("$glia" "$@" 2>&1); then fail "glia $* succeeded"; fi
  grep -qF -- "$text" <<< "$out" || fail "glia $* did not say '$text': $out"
}
expect_failure "needs --data FILE" train --dataset csv --model-json "$dir/m.json"
expect_failure "no column 'kind'" train --dataset csv --data "$dir/d.csv" --label kind \
  --model-json "$dir/m.json"
expect_failure "the examples have 4 values each" train --dataset csv --data "$dir/d.csv"
expect_failure "is not a class in 0..1" train --dataset csv --data "$dir/d.csv" --classes 2 \
  --model-json "$dir/m.json"
echo "ok: trained on user data"
