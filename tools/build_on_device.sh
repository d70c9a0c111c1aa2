#!/usr/bin/env bash
# On a GPU machine: build testsuite/projects/cuda_app twice with CMake, plain and through
# the polycoal launcher, run both programs and compare the checksums they print (relative
# tolerance 1e-5: the transformed build may add in another order).
#
#   tools/build_on_device.sh [BUILD_DIR]
#
# PYTHON: an interpreter with polycoal installed (default python3); CUDA_ARCH: the
# architectures to build for (default 90, the H100/H200). Exit status 0 when the outputs
# agree, 1 when they differ, 2 when something is missing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d /tmp/polycoal-device-XXXXXX)}
PYTHON=${PYTHON:-python3}
ARCH=${CUDA_ARCH:-90}
project="$repo/testsuite/projects/cuda_app"

if ! "$PYTHON" -c "import polycoal" 2>/dev/null; then
    echo "build_on_device: $PYTHON cannot import polycoal (pip install -e '$repo', or set PYTHON)" >&2
    exit 2
fi
for tool in cmake nvcc; do
    command -v "$tool" >/dev/null || { echo "build_on_device: $tool is not on PATH" >&2; exit 2; }
done
generator="Unix Makefiles"
command -v ninja >/dev/null && generator=Ninja
mkdir -p "$out"

build() {   # build NAME [cmake options...]
    local name=$1; shift
    cmake -S "$project" -B "$out/$name" -G "$generator" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" "$@" \
        > "$out/$name.configure.log"
    POLYCOAL_VERBOSE=1 cmake --build "$out/$name" 2>&1 | tee "$out/$name.build.log" | grep polycoal || true
}
build plain
build polycoal -DCMAKE_CUDA_COMPILER_LAUNCHER="$PYTHON;-m;polycoal;launch"

"$out/plain/app" > "$out/plain.txt"
"$out/polycoal/app" > "$out/polycoal.txt"
echo "== plain build";    cat "$out/plain.txt"
echo "== polycoal build"; cat "$out/polycoal.txt"

"$PYTHON" - "$out/plain.txt" "$out/polycoal.txt" <<'PY'
import math, sys
def read(path):
    return dict((name, float(value)) for name, value in
                (line.split() for line in open(path) if line.strip()))
plain, transformed = read(sys.argv[1]), read(sys.argv[2])
bad = [name for name in plain if name not in transformed or
       not math.isclose(plain[name], transformed[name], rel_tol=1e-5, abs_tol=1e-12)]
if bad or set(plain) != set(transformed):
    print("MISMATCH:", ", ".join(bad) or "different checksums printed")
    sys.exit(1)
print(f"MATCH: {len(plain)} checksums agree (rel. tolerance 1e-5)")
PY
