#!/usr/bin/env bash
# Rewrites the committed fuzz seeds in tests/fuzz/seeds: tiny IDX files of every element
# type (plain and gzip), .npy and .npz files as numpy writes them, and with glia's own
# writer (fuzz_write_seeds, in the build folder) checkpoints and model JSONs. Every file
# is a few KB at most; never real data sets.
#   tests/fuzz/make_seeds.sh [BUILD_DIR]      # default: ./build
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build}"
seeds="$here/seeds"
rm -rf "$seeds/cli_args" "$seeds/idx" "$seeds/npy" "$seeds/npz" "$seeds/checkpoint" "$seeds/model_json"
mkdir -p "$seeds/idx" "$seeds/npy" "$seeds/npz" "$seeds/cli_args"
"$build/tests/fuzz/fuzz_write_seeds" "$seeds"

/usr/bin/python3 - "$seeds" <<'PY'
import gzip, struct, sys
import numpy as np

seeds = sys.argv[1]

def idx(name, code, fmt, dims, values, gz=False):
    data = bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    data += b"".join(struct.pack(">" + fmt, v) for v in values)
    path = f"{seeds}/idx/{name}"
    if gz:
        # mtime=0: the same bytes on every run.
        open(path + ".gz", "wb").write(gzip.compress(data, mtime=0))
    else:
        open(path, "wb").write(data)

idx("u8_2x3", 0x08, "B", [2, 3], range(6))
idx("i8_4", 0x09, "b", [4], [-128, -1, 0, 127])
idx("i16_2x2", 0x0B, "h", [2, 2], [-32768, -1, 1, 32767])
idx("i32_3", 0x0C, "i", [3], [-2**31, 0, 2**31 - 1])
idx("f32_1x2x2", 0x0D, "f", [1, 2, 2], [1.5, -0.0, float("inf"), float("nan")])
idx("f64_2", 0x0E, "d", [2], [3.141592653589793, -1e300])
idx("u8_empty_4x0", 0x08, "B", [4, 0], [])
idx("u8_rank8", 0x08, "B", [1, 2, 1, 1, 2, 1, 1, 1], range(4))
idx("u8_2x3", 0x08, "B", [2, 3], range(6), gz=True)
idx("f32_2x2", 0x0D, "f", [2, 2], [0.5, 1, 2, 4], gz=True)

arrays = {
    "f4_2x3": np.arange(6, dtype="<f4").reshape(2, 3),
    "f8_scalar": np.array(2.5, dtype="<f8"),
    "f2_3": np.array([1, -2, 65504], dtype="<f2"),
    "i4_2": np.array([-7, 2**31 - 1], dtype="<i4"),
    "i8_2": np.array([-9 * 10**18, 5], dtype="<i8"),
    "u4_1": np.array([4 * 10**9], dtype="<u4"),
    "u1_2x2": np.array([[0, 255], [1, 2]], dtype="u1"),
    "b1_3": np.array([True, False, True]),
    "f4_empty_0x3": np.zeros((0, 3), dtype="<f4"),
}
for name, a in arrays.items():
    np.save(f"{seeds}/npy/{name}.npy", a)
# Version 2.0 (a 4-byte header length), and two that glia refuses with a clear error.
with open(f"{seeds}/npy/f4_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.ones(2, dtype="<f4"), version=(2, 0))
np.save(f"{seeds}/npy/fortran_2x2.npy", np.asfortranarray(np.ones((2, 2), dtype="<f4")))
np.save(f"{seeds}/npy/big_endian.npy", np.ones(2, dtype=">i8"))

np.savez(f"{seeds}/npz/stored.npz", x=np.arange(6, dtype="<f4").reshape(3, 2),
         y=np.array([0, 1, 2], dtype="<i8"))
np.savez_compressed(f"{seeds}/npz/deflated.npz", x=np.zeros((4, 2), dtype="<f4"),
                    y=np.ones(4, dtype="u1"))
PY
# Flag values as the command line and checkpoint config entries hold them.
i=0
for v in 128 -1 +5 0 0.001 1e-3 0.10000000000000001 18446744073709551615 \
  -9223372036854775808 nan inf "mlp_*,lstm_epoch" cpu,,interp,; do
  printf '%s' "$v" > "$seeds/cli_args/$i"
  i=$((i + 1))
done
du -sh --apparent-size "$seeds"
