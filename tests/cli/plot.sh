#!/usr/bin/env bash
# Training curves from the command line, on a small MNIST-shaped synthetic set: `glia train
# --plot --log-csv` writes an SVG (valid XML, checked with python3 where it is installed)
# with one curve per metric and a CSV row per epoch; `glia plot` draws the same from the
# checkpoint; a missing checkpoint and an unwritable file are errors.
#   plot.sh GLIA_BINARY
set -u
glia=$1
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$here/make_idx_data.sh" "$dir/data" 320 100 || fail "cannot write the data"
"$glia" train --data-dir "$dir/data" --epochs 3 --backend interp --plot "$dir/c.svg" \
  --log-csv "$dir/c.csv" --checkpoint "$dir/m.h5" > "$dir/train.log" 2>&1 ||
  { cat "$dir/train.log"; fail "glia train --plot"; }
[[ $(head -1 "$dir/c.csv") == "epoch,accuracy,loss" ]] || fail "CSV header: $(head -1 "$dir/c.csv")"
[[ $(wc -l < "$dir/c.csv") -eq 4 ]] || fail "CSV rows: $(cat "$dir/c.csv")"
[[ $(grep -c '<polyline class="curve"' "$dir/c.svg") -eq 2 ]] || fail "curves in $(cat "$dir/c.svg")"
if command -v python3 > /dev/null; then
  python3 - "$dir/c.svg" << 'PY' || fail "the SVG is not valid XML with 2 curves"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
curves = root.findall(".//{http://www.w3.org/2000/svg}polyline")
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
assert sorted(c.get("data-metric") for c in curves) == ["accuracy", "loss"], curves
assert all(len(c.get("points").split()) == 3 for c in curves)
PY
else
  echo "note: no python3, the SVG's XML is not parsed"
fi
"$glia" plot --checkpoint "$dir/m.h5" --output "$dir/p.svg" --csv "$dir/p.csv" | grep -q "3 epochs" ||
  fail "glia plot"
cmp -s "$dir/c.csv" "$dir/p.csv" || fail "glia plot's CSV differs from train's"
out=$("$glia" plot --checkpoint "$dir/none.h5" --output "$dir/x.svg" 2>&1) && fail "a missing checkpoint plotted"
grep -q "none.h5" <<< "$out" || fail "no file named: $out"
out=$("$glia" plot --checkpoint "$dir/m.h5" --output "$dir/no/such/x.svg" 2>&1) && fail "wrote nowhere"
grep -q "cannot write" <<< "$out" || fail "no write error: $out"
echo "ok: curves drawn"
