#!/usr/bin/env bash
# `glia train` on a data folder whose IDX files are corrupt must fail with a message
# naming the file, not crash.
#   corrupt_data.sh GLIA_BINARY
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  printf 'not an idx file at all' > "$dir/$f"
done
exec "$(dirname "$0")/expect_failure.sh" "train-images-idx3-ubyte" "$1" train --data-dir "$dir" --epochs 1
