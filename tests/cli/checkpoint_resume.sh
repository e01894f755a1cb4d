#!/usr/bin/env bash
# The checkpoint round trip from the command line, on a small MNIST-shaped synthetic set:
# 2 epochs with --checkpoint, then --resume up to 5, give the same parameters (the
# fingerprint `glia summary` prints) and the same `glia predict` outputs as 5 epochs in
# one run; so does a run killed with SIGKILL after a mid-epoch checkpoint and resumed.
# `glia eval --checkpoint` repeats the test loss the training printed.
#   checkpoint_resume.sh GLIA_BINARY [BACKEND]
set -u
glia=$1
backend=${2:-interp}
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() {  # LOG ARGS...: runs glia, keeping its output in LOG
  local log=$1
  shift
  "$glia" "$@" > "$dir/$log" 2>&1 || { cat "$dir/$log"; fail "glia $*"; }
}
fingerprint() { "$glia" summary --checkpoint "$1" | sed -n 's/.*parameter fingerprint //p'; }

"$here/make_idx_data.sh" "$dir/data" 320 100 || fail "cannot write the data"
common=(--data-dir "$dir/data" --model mlp --batch-size 32 --seed 3 --backend "$backend")

run full.log train "${common[@]}" --epochs 5 --checkpoint "$dir/full.h5"
run part.log train "${common[@]}" --epochs 2 --checkpoint "$dir/part.h5"
# Only --epochs, --data-dir and the file: the other settings come from the checkpoint.
run resumed.log train --data-dir "$dir/data" --epochs 5 --checkpoint "$dir/part.h5" --resume
grep -q "resuming .*part.h5: 2 epochs and 0 batches done (step 20)" "$dir/resumed.log" ||
  fail "no resume line: $(cat "$dir/resumed.log")"
want=$(fingerprint "$dir/full.h5")
[ -n "$want" ] || fail "summary printed no fingerprint"
[ "$(fingerprint "$dir/part.h5")" = "$want" ] || fail "2 + 3 resumed epochs differ from 5"
test_line=$(grep '^test loss' "$dir/full.log")
[ "$(grep '^test loss' "$dir/resumed.log")" = "$test_line" ] || fail "test loss differs"
run eval.log eval --data-dir "$dir/data" --checkpoint "$dir/full.h5"
[ "$(grep '^test loss' "$dir/eval.log")" = "$test_line" ] || fail "eval: $(cat "$dir/eval.log")"

# Killed after its first mid-epoch checkpoint (every 4 iterations), then resumed.
"$glia" train "${common[@]}" --epochs 5 --checkpoint "$dir/killed.h5" --checkpoint-every 4 \
  > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -e "$dir/killed.h5" ] && break; sleep 0.01; done
sleep 0.$((RANDOM % 5))
kill -9 "$pid" 2> /dev/null
wait "$pid" 2> /dev/null
[ -e "$dir/killed.h5" ] || fail "the killed run wrote no checkpoint"
run killed.log train --data-dir "$dir/data" --epochs 5 --checkpoint "$dir/killed.h5" --resume
[ "$(fingerprint "$dir/killed.h5")" = "$want" ] || fail "the killed and resumed run differs"

# A .npy batch of 4 images (f32 [4][784]), values from {0, 0.25, 0.5, 1}.
{
  header="{'descr': '<f4', 'fortran_order': False, 'shape': (4, 784), }"
  pad=$(((64 - (10 + ${#header} + 1) % 64) % 64))
  printf '\x93NUMPY\x01\x00'
  len=$((${#header} + pad + 1))
  printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
  printf '%s%*s\n' "$header" "$pad" ""
  floats=('\x00\x00\x00\x00' '\x00\x00\x80\x3e' '\x00\x00\x00\x3f' '\x00\x00\x80\x3f')
  for ((i = 0; i < 4 * 784; i++)); do printf "${floats[$(((i * 7 + i / 784) % 4))]}"; done
} > "$dir/x.npy"
run predict_full.log predict --checkpoint "$dir/full.h5" --input "$dir/x.npy" \
  --output "$dir/y_full.npy" --backend "$backend"
grep -q "f32\[4\]\[10\]" "$dir/predict_full.log" || fail "predict: $(cat "$dir/predict_full.log")"
run predict_part.log predict --checkpoint "$dir/part.h5" --input "$dir/x.npy" \
  --output "$dir/y_part.npy" --backend "$backend"
cmp -s "$dir/y_full.npy" "$dir/y_part.npy" || fail "predictions differ"
echo "checkpoint round trip ok ($backend)"
