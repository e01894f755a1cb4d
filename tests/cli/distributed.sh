#!/usr/bin/env bash
# glia train --distributed under mpirun -np 2 (tests/dist/run_mpi.sh; exits 77 without
# mpirun) on a small MNIST-shaped set: one progress stream and one test line (rank 0's),
# a checkpoint that records 2 processes, a resume on 2, a resume on 1 refused, and a
# failure on one rank (missing data) ending the job with an error instead of a hang.
#   distributed.sh GLIA_BINARY
set -u
glia=$1
here=$(dirname "$0")
mpi="$here/../dist/run_mpi.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$here/make_idx_data.sh" "$dir/data" 320 100 || fail "cannot write the data"
common=(--data-dir "$dir/data" --model mlp --batch-size 32 --seed 3 --backend cpu --threads 1)

"$mpi" 2 "$glia" train --distributed "${common[@]}" --epochs 2 --checkpoint "$dir/run.h5" \
  --json > "$dir/train.log" 2>&1
code=$?
[ "$code" -ne 77 ] || { cat "$dir/train.log"; exit 77; }
[ "$code" -eq 0 ] || { cat "$dir/train.log"; fail "mpirun glia train --distributed: exit $code"; }
[ "$(grep -c '^test loss' "$dir/train.log")" -eq 1 ] || { cat "$dir/train.log"; fail "not one test line"; }
[ "$(grep -c 'Epoch 2/2' "$dir/train.log")" -ge 1 ] || { cat "$dir/train.log"; fail "no progress"; }
grep -q '"processes":2' "$dir/train.log" || fail "the JSON line has no processes: 2"
grep -q '"epochs":2' "$dir/train.log" || fail "the JSON line has no epochs: 2"
[ -e "$dir/run.h5" ] || fail "no checkpoint"

"$mpi" 2 "$glia" train --distributed --data-dir "$dir/data" --threads 1 --epochs 3 \
  --checkpoint "$dir/run.h5" --resume > "$dir/resume.log" 2>&1 ||
  { cat "$dir/resume.log"; fail "resume on 2 processes"; }
grep -q "resuming .*run.h5: 2 epochs and 0 batches done (step 20)" "$dir/resume.log" ||
  fail "no resume line: $(cat "$dir/resume.log")"
[ "$(grep -c '^resuming' "$dir/resume.log")" -eq 1 ] || fail "more than one rank printed"

out=$("$glia" train --data-dir "$dir/data" --epochs 4 --checkpoint "$dir/run.h5" --resume 2>&1)
code=$?
[ "$code" -ne 0 ] && [ "$code" -lt 128 ] || fail "a 1-process resume of a 2-process run: exit $code"
printf '%s' "$out" | grep -q "mpirun -np 2" || fail "the refusal does not say how: $out"

out=$(timeout 120 "$mpi" 2 "$glia" train --distributed --data-dir "$dir/none" --epochs 1 2>&1)
code=$?
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || fail "missing data under mpirun: exit $code: $out"
printf '%s' "$out" | grep -q "glia: error (rank [01] of 2)" || fail "no rank in the error: $out"
echo "ok: trained on 2 processes"
