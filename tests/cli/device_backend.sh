#!/usr/bin/env bash
# The commands that run compiled graphs on a device backend (cuda by default), whose
# outputs stay on the device: train (with a checkpoint), eval, predict and bench each
# either work or, on a machine without the device, fail cleanly with the backend's own
# "no CUDA device" message. Skipped (exit 77) where the backend is not built.
#   device_backend.sh GLIA_BINARY [BACKEND]
set -u
glia=$1
backend=${2:-cuda}
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$here/make_idx_data.sh" "$dir/data" 64 32 || fail "cannot write the data"
"$glia" train --data-dir "$dir/data" --epochs 1 --backend interp --checkpoint "$dir/host.h5" \
  > "$dir/host.log" 2>&1 || { cat "$dir/host.log"; fail "training on interp"; }
# A .npy batch of 2 zero images (f32 [2][784]).
{
  header="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 784), }"
  pad=$(((64 - (10 + ${#header} + 1) % 64) % 64))
  len=$((${#header} + pad + 1))
  printf '\x93NUMPY\x01\x00'
  printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
  printf '%s%*s\n' "$header" "$pad" ""
  head -c $((2 * 784 * 4)) /dev/zero
} > "$dir/x.npy"

worked=0 unavailable=0
check() {  # NAME ARGS...: runs glia; it must succeed or fail with the device's message
  local name=$1
  shift
  "$glia" "$@" > "$dir/$name.log" 2>&1
  local code=$?
  if grep -q "unknown backend '$backend'" "$dir/$name.log"; then
    echo "skipped: no '$backend' backend in this build"
    exit 77
  fi
  if [ "$code" -eq 0 ]; then
    worked=$((worked + 1))
  elif [ "$code" -ge 128 ]; then
    cat "$dir/$name.log"
    fail "$name crashed (exit $code)"
  elif grep -q "glia: error: .*no CUDA device" "$dir/$name.log"; then
    unavailable=$((unavailable + 1))
  else
    cat "$dir/$name.log"
    fail "$name failed without saying the device is missing (exit $code)"
  fi
}

check train train --data-dir "$dir/data" --epochs 2 --batch-size 16 --backend "$backend" \
  --checkpoint "$dir/dev.h5" --checkpoint-every 3
check eval eval --data-dir "$dir/data" --checkpoint "$dir/host.h5" --backend "$backend"
check predict predict --checkpoint "$dir/host.h5" --input "$dir/x.npy" --output "$dir/y.npy" \
  --backend "$backend"
check bench bench --backends "$backend" --cases tiny_init,tiny_predict,mlp_predict_b1 \
  --no-peer --quick
if [ "$worked" -gt 0 ] && [ "$unavailable" -gt 0 ]; then
  fail "$worked command(s) ran on $backend and $unavailable found no device"
fi
if [ "$worked" -gt 0 ]; then
  grep -q "^test loss" "$dir/train.log" || fail "train printed no test loss"
  [ -s "$dir/dev.h5" ] || fail "train wrote no checkpoint"
  grep -q "f32\[2\]\[10\]" "$dir/predict.log" || fail "predict: $(cat "$dir/predict.log")"
  echo "ran on $backend: train, eval, predict and bench"
else
  echo "no device for $backend: every command said so ($(head -n 1 "$dir/train.log"))"
fi
