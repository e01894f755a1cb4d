# Sourced by the CLI tests that train on the real MNIST: sets `data` to its folder
# ($GLIA_DATA_DIR, else the checkout's data/mnist), or skips the test (exit 77) without it.
data=${GLIA_DATA_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../data/mnist}
if [[ ! -e $data/train-images-idx3-ubyte && ! -e $data/train-images-idx3-ubyte.gz ]]; then
  echo "SKIP: no MNIST in $data (./apps/setup.sh test fetches it)"
  exit 77
fi
