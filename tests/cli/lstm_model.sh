#!/usr/bin/env bash
# The recurrent model from the command line, on a small MNIST-shaped synthetic set: `glia
# train --model lstm` trains and checkpoints it, `glia summary` shows its lstm layer read
# back from the checkpoint, and `glia eval` gives the same test accuracy as training did.
#   lstm_model.sh GLIA_BINARY
set -u
glia=$1
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$here/make_idx_data.sh" "$dir/data" 256 100 || fail "cannot write the data"
"$glia" train --data-dir "$dir/data" --model lstm --epochs 1 --batch-size 64 \
  --checkpoint "$dir/m.h5" --json > "$dir/train.log" 2>&1 ||
  { cat "$dir/train.log"; fail "glia train --model lstm"; }
trained=$(sed -n 's/.*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$dir/train.log")
[ -n "$trained" ] || { cat "$dir/train.log"; fail "no test_accuracy"; }
"$glia" summary --checkpoint "$dir/m.h5" > "$dir/summary.log" 2>&1 || fail "glia summary"
grep -q "lstm" "$dir/summary.log" || { cat "$dir/summary.log"; fail "no lstm layer in the summary"; }
# lstm: kernel 28x512, recurrent 128x512, bias 512; dense: 128x10 + 10
grep -q "Total parameters: 81674" "$dir/summary.log" || { cat "$dir/summary.log"; fail "parameter count"; }
"$glia" eval --data-dir "$dir/data" --checkpoint "$dir/m.h5" --json > "$dir/eval.log" 2>&1 ||
  { cat "$dir/eval.log"; fail "glia eval"; }
evaluated=$(sed -n 's/.*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$dir/eval.log")
[ "$evaluated" = "$trained" ] || fail "eval gives $evaluated, training gave $trained"
echo "ok: lstm trained, summarised and evaluated ($trained on random pixels)"
