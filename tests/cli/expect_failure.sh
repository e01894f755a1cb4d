#!/usr/bin/env bash
# Runs a command that must fail cleanly: a non-zero exit (not a crash by signal) and
# output matching a regular expression.
#   expect_failure.sh REGEX COMMAND [ARGS...]
set -u
regex=$1
shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if [ "$code" -eq 0 ]; then echo "expected a failure, got exit 0"; exit 1; fi
if [ "$code" -ge 128 ]; then echo "crashed (exit $code)"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "output does not match: $regex"; exit 1; fi
exit 0
