#!/usr/bin/env bash
# Writes a small MNIST-shaped data set (the four IDX files, random pixels, labels cycling
# through 0..9) for CLI tests that must not depend on the real MNIST download.
#   make_idx_data.sh FOLDER TRAIN_COUNT TEST_COUNT
set -eu
dir=$1
mkdir -p "$dir"

be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }

images() {  # FILE COUNT
  { printf '\x00\x00\x08\x03'; be32 "$2"; be32 28; be32 28; head -c $(($2 * 784)) /dev/urandom; } > "$1"
}
labels() {  # FILE COUNT
  { printf '\x00\x00\x08\x01'; be32 "$2"
    for ((i = 0; i < $2; i++)); do printf "\\x0$((i % 10))"; done; } > "$1"
}

images "$dir/train-images-idx3-ubyte" "$2"
labels "$dir/train-labels-idx1-ubyte" "$2"
images "$dir/t10k-images-idx3-ubyte" "$3"
labels "$dir/t10k-labels-idx1-ubyte" "$3"
