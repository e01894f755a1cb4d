#!/usr/bin/env bash
# Bad checkpoint and .npy files and flags given to train, eval, predict and summary must
# fail cleanly (a message, a non-zero exit, no crash): truncated and garbage checkpoints,
# --resume with fewer epochs than done or another model, inputs of the wrong shape or
# dtype, damaged .npy files.
#   checkpoint_errors.sh GLIA_BINARY
set -u
glia=$1
here=$(dirname "$0")
expect="$here/expect_failure.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
case_() {  # NAME REGEX ARGS...: one failing command line
  local name=$1
  shift
  echo "--- $name"
  "$expect" "$@" || failed=1
}

"$here/make_idx_data.sh" "$dir/data" 64 20 || exit 1
"$glia" train --data-dir "$dir/data" --epochs 2 --checkpoint "$dir/m.h5" > /dev/null 2>&1 ||
  { echo "cannot train the checkpoint to damage"; exit 1; }
size=$(stat -c %s "$dir/m.h5")
head -c $((size / 2)) "$dir/m.h5" > "$dir/half.h5"
printf 'not a checkpoint' > "$dir/text.h5"
: > "$dir/empty.h5"

case_ truncated "half.h5.*(truncated|corrupt)" "$glia" summary --checkpoint "$dir/half.h5"
case_ garbage "text.h5: not an HDF5 file" "$glia" eval --data-dir "$dir/data" --checkpoint "$dir/text.h5"
case_ empty "empty.h5: not an HDF5 file" "$glia" predict --checkpoint "$dir/empty.h5" \
  --input "$dir/x.npy" --output "$dir/y.npy"
case_ resume_truncated "half.h5" "$glia" train --data-dir "$dir/data" --checkpoint "$dir/half.h5" --resume
case_ resume_fewer_epochs "--epochs 1 counts the epochs from the run's start.*completed 2" \
  "$glia" train --data-dir "$dir/data" --epochs 1 --checkpoint "$dir/m.h5" --resume
case_ resume_other_model "--model cnn: the checkpoint .*m.h5 holds a mlp model" \
  "$glia" train --data-dir "$dir/data" --model cnn --epochs 3 --checkpoint "$dir/m.h5" --resume

# Inputs for predict: the model takes f32[-1][784].
npy() {  # FILE DESCR SHAPE BYTES: a .npy file with BYTES of zeros as data
  local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$(((64 - (10 + ${#header} + 1) % 64) % 64)) len
  len=$((${#header} + pad + 1))
  { printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    printf '%s%*s\n' "$header" "$pad" ""
    head -c "$4" /dev/zero; } > "$1"
}
npy "$dir/images.npy" '|u1' '(2, 28, 28)' 1568
npy "$dir/short.npy" '<f4' '(2, 784)' 100
npy "$dir/ok.npy" '<f4' '(2, 784)' 6272
case_ predict_wrong_input "images.npy is u8\[2\]\[28\]\[28\]; the model's input 'pixels' takes f32\[-1\]\[784\]" \
  "$glia" predict --checkpoint "$dir/m.h5" --input "$dir/images.npy" --output "$dir/y.npy"
case_ predict_truncated_npy "short.npy" \
  "$glia" predict --checkpoint "$dir/m.h5" --input "$dir/short.npy" --output "$dir/y.npy"
case_ predict_missing_npy "none.npy" \
  "$glia" predict --checkpoint "$dir/m.h5" --input "$dir/none.npy" --output "$dir/y.npy"
case_ predict_no_output_folder "no/such" \
  "$glia" predict --checkpoint "$dir/m.h5" --input "$dir/ok.npy" --output "$dir/no/such/y.npy"
case_ predict_needs_flags "--input is required" "$glia" predict --checkpoint "$dir/m.h5"
[ ! -e "$dir/y.npy" ] || { echo "a failed predict wrote y.npy"; failed=1; }
echo "--- predict_ok"
"$glia" predict --checkpoint "$dir/m.h5" --input "$dir/ok.npy" --output "$dir/y.npy" ||
  failed=1
exit $failed
