#!/usr/bin/env bash
# The GPU verification of lumen in one command (docs/gpu-check.md). From the repository root:
#
#   bash scripts/gpu-check.sh                # on the GPU machine: build, test, benchmark
#   bash scripts/gpu-check.sh --fetch-deps   # on a Debian 12 machine, once: download the
#                                            # Debian packages the GPU machine may lack into
#                                            # build-deps/ (carry it: carry=["build-deps"])
#
# Steps (each prints PASS / FAIL / SKIP / MISSED; a failed step does not stop the later ones):
#   1 environment   python with torch (+cupy), GPU (nvidia-smi), nvcc, cmake, ninja, compilers
#   2 dependencies  pkg-config, libpng/jpeg/tiff, fftw3f, cmocka, dlpack.h, Python headers;
#                   what the system lacks is taken from build-deps/*.deb when that is there
#   3 configure     cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=ON
#                   -DPython3_EXECUTABLE=<python> (-DLUMEN_TESTS=OFF without cmocka)
#   4 build         cmake --build build-gpu (ninja -k 0: as much as builds)
#   5 CUDA module   build-gpu/lumen-modules/liblumen_cuda.so exists and its libraries resolve; the
#                   cuDNN entries conv uses are in libcudnn.so.9 (lumen_cudnn_symbols)
#   6 lumen info    build-gpu/lumen info; with a GPU, a cuda device must be listed
#   7 C tests cuda  ctest -R cuda -V (test_cuda.c; "no CUDA device: skipped" with a GPU fails)
#   8 C tests rest  ctest -E cuda: the rest of the C suite (with a GPU, device auto is the GPU)
#   9 Python tests  the package's tests (tests/python/test_py_*.py, phos, CLI devices, *cuda*)
#  10 benchmark     bench/gpu_bench.py: the markdown page and JSON to $OUT/ (else docs/)
#  11 Vulkan        the Vulkan module on the GPU (docs/vulkan.md): lumen info lists a non-software
#                   vulkan device, ctest -R vulkan on it, lumen bench --device vulkan:N beside
#                   --device cuda:0 (issue 13's target: within 2x of CUDA); SKIP without the
#                   module (no libvulkan-dev/glslc at build time) or without a Vulkan GPU driver
#
# Exit status: 0 all passed; 1 a step failed; 3 nothing failed but the benchmark missed a target.
# A step that cannot run here (no GPU, no tests built) is SKIP and does not fail the run.
#
# Environment knobs:
#   LUMEN_GPU_PYTHON=PATH  the python with torch and cupy (default: the first of python3,
#                          /opt/torch/.venv/bin/python3, /usr/bin/python3 that imports torch)
#   GPU_CHECK_BUILD=DIR    build tree (default build-gpu); GPU_CHECK_FRESH=1 wipes it first
#   GPU_CHECK_CUDA_ARCH=N  CMAKE_CUDA_ARCHITECTURES (default: the GPU's compute capability, 90)
#   GPU_CHECK_DEADLINE=S   seconds the whole run may take (default 540, under the run tool's 600)
#   GPU_CHECK_QUICK=1      bench --quick; GPU_CHECK_BENCH_ARGS="..." more bench arguments
#   GPU_CHECK_PYTEST="..." test files for step 9 (default above)
#   GPU_CHECK_SKIP="..."   steps to leave out, by key: ctest-cuda ctest-rest pytest bench vulkan
#   GPU_CHECK_COMMIT=REV   the commit the page names (the run tool's copy of .git may be stale)
set -u
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
if [ ! -f CMakeLists.txt ] || [ ! -f bench/gpu_bench.py ]; then
  echo "gpu-check: $ROOT is not lumen's repository root (run scripts/gpu-check.sh from the tree)"
  exit 2
fi
START=$(date +%s)
DEADLINE=${GPU_CHECK_DEADLINE:-540}
BUILD=${GPU_CHECK_BUILD:-build-gpu}
DEPS_DIR=$ROOT/build-deps
DEPS_PREFIX=/tmp/lumen-gpu-deps
ARCH_TRIPLET=$( (cc -print-multiarch || gcc -print-multiarch) 2>/dev/null | grep . || echo x86_64-linux-gnu)

# Debian 12 packages for a machine without them: the -dev packages the core, the tests and the
# Python package need, and the run-time libraries they link that are not in every base image.
DEB_PACKAGES=(pkgconf pkgconf-bin libpkgconf3
  libfftw3-dev libfftw3-single3
  libpng-dev libpng16-16 zlib1g-dev zlib1g
  libjpeg-dev libjpeg62-turbo-dev libjpeg62-turbo
  libtiff-dev libtiff6 libdeflate0 libjbig0 liblerc4 libwebp7
  libwebp-dev libwebpmux3 libwebpdemux2
  libopenexr-dev libopenexr-3-1-30 libimath-3-1-29 libimath-dev
  libcmocka-dev libcmocka0
  libdlpack-dev)

# ---- --fetch-deps: run on the Debian machine, not on the GPU machine ----------------------------
if [ "${1:-}" = "--fetch-deps" ]; then
  command -v apt-get >/dev/null || { echo "gpu-check: --fetch-deps needs apt-get (Debian)"; exit 1; }
  mkdir -p "$DEPS_DIR" || exit 1
  rm -f "$DEPS_DIR"/*.deb
  echo "gpu-check: downloading ${#DEB_PACKAGES[@]} Debian packages into $DEPS_DIR"
  apt-get update -qq || echo "gpu-check: warning: apt-get update failed; trying the lists at hand"
  (cd "$DEPS_DIR" && apt-get download -q -o APT::Sandbox::User=root "${DEB_PACKAGES[@]}") || {
    echo "gpu-check: apt-get download failed"; exit 1; }
  ls -l "$DEPS_DIR"
  echo "gpu-check: $(du -sh "$DEPS_DIR" | cut -f1) in build-deps/ (ignored by git: build-*/)."
  echo "gpu-check: on the GPU machine, with the run tool:"
  echo '  run(command="bash scripts/gpu-check.sh", carry=["build-deps"], timeout_s=600)'
  exit 0
fi
case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d'; exit 0 ;;
  *) echo "gpu-check: unknown argument '$1' (--fetch-deps, --help)"; exit 2 ;;
esac

# ---- where things go ------------------------------------------------------------------------
mkdir -p "$BUILD" || exit 1
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  REPORT_DIR=$OUT        # the run tool brings back what is written under $OUT
  MD_DEST=$OUT/
  LOG=$OUT/gpu-check.log
else
  REPORT_DIR=$ROOT/$BUILD/gpu-check
  MD_DEST=$ROOT/docs/
  mkdir -p "$REPORT_DIR"
  LOG=$REPORT_DIR/gpu-check.log
fi
BUILD_LOG=$REPORT_DIR/build.log
CTEST_LOG=$REPORT_DIR/ctest.log
PYTEST_LOG=$REPORT_DIR/pytest.log
JSON=$REPORT_DIR/gpu_bench.json
: > "$LOG"; : > "$CTEST_LOG"
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

NAMES=(); STATUS=(); NOTES=()
record() {  # record NAME STATUS NOTE
  NAMES+=("$1"); STATUS+=("$2"); NOTES+=("${3:-}")
  printf '==> %s: %s%s\n\n' "$1" "$2" "${3:+ ($3)}"
}
header() { printf '\n==== [%s] %s (%ss elapsed)\n' "$1" "$2" "$(( $(date +%s) - START ))"; }
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
budget() {  # budget MAX RESERVE: seconds for a step: at most MAX, leaving RESERVE; at least 30
  local b=$(( $(left) - $2 ))
  [ $b -gt "$1" ] && b=$1
  [ $b -lt 30 ] && b=30
  echo $b
}
skipped() { case " ${GPU_CHECK_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }

echo "gpu-check: lumen GPU verification, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), in $ROOT"
echo "gpu-check: logs in $REPORT_DIR; deadline ${DEADLINE}s"

# ---- 1 environment --------------------------------------------------------------------------
header 1 environment
pick_python() {
  if [ -n "${LUMEN_GPU_PYTHON:-}" ]; then echo "$LUMEN_GPU_PYTHON"; return; fi
  local p
  for p in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import torch, numpy' >/dev/null 2>&1; then command -v "$p"; return; fi
  done
  for p in python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import numpy' >/dev/null 2>&1; then command -v "$p"; return; fi
  done
  echo python3
}
PY=$(pick_python)
PY_BIN_DIR=$(dirname "$(command -v "$PY" || echo "$PY")")
# cmake and ninja may be pip packages living beside that python
case ":$PATH:" in *":$PY_BIN_DIR:"*) ;; *) PATH=$PATH:$PY_BIN_DIR ;; esac
NVCC=$(command -v nvcc || true)
if [ -z "$NVCC" ]; then
  for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    [ -x "$c" ] && { NVCC=$c; break; }
  done
fi
[ -n "$NVCC" ] && case ":$PATH:" in *":$(dirname "$NVCC"):"*) ;; *) PATH=$(dirname "$NVCC"):$PATH ;; esac
export PATH

echo "host: $(uname -srm); $(nproc) CPUs; $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "python: $PY ($("$PY" --version 2>&1))"
"$PY" - <<'EOF' 2>&1 | sed 's/^/  /'
import importlib
for name in ("numpy", "torch", "cupy", "cv2", "scipy", "pytest"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" (CUDA {m.version.cuda}, cuda available: {m.cuda.is_available()}" + (
                f", {m.cuda.get_device_name(0)}" if m.cuda.is_available() else "") + ")"
        print(f"{name} {getattr(m, '__version__', '?')}{extra}")
    except Exception as e:
        print(f"{name}: not importable ({type(e).__name__}: {e})")
EOF
GPU_NAME=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  nvidia-smi 2>&1 | head -20
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  CC_CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
else
  echo "GPU: none (nvidia-smi missing or lists no GPU): the GPU steps will be SKIP"
  CC_CAP=""
fi
CUDA_ARCH=${GPU_CHECK_CUDA_ARCH:-${CC_CAP:-90}}
echo "nvcc: ${NVCC:-not found}${NVCC:+ ($("$NVCC" --version | grep -o 'release [0-9.]*'))}"
echo "cmake: $(command -v cmake || echo 'not found') $(cmake --version 2>/dev/null | head -1)"
echo "ninja: $(command -v ninja || echo 'not found') $(ninja --version 2>/dev/null)"
echo "cc: $(command -v cc || command -v gcc || echo 'not found') $(cc --version 2>/dev/null | head -1)"
echo "CUDA architectures for the module: $CUDA_ARCH"
ENV_NOTE="python $PY; GPU: ${GPU_NAME:-none}; nvcc: ${NVCC:-none}"
if ! command -v cmake >/dev/null 2>&1; then
  record environment FAIL "no cmake: nothing can be built ($ENV_NOTE)"
else
  record environment PASS "$ENV_NOTE"
fi

# ---- 2 dependencies -------------------------------------------------------------------------
header 2 dependencies
CC_BIN=$(command -v cc || command -v gcc || echo cc)
PKG_CONFIG_BIN=$(command -v pkg-config || command -v pkgconf || true)
EXTRA_INC=(); EXTRA_LIB=()
have_header() { printf '#include <%s>\n' "$1" | "$CC_BIN" -E -x c - "${EXTRA_INC[@]}" >/dev/null 2>&1; }
have_lib() { printf 'int main(void){return 0;}\n' | "$CC_BIN" -x c - -o /dev/null "${EXTRA_LIB[@]}" "-l$1" >/dev/null 2>&1; }
have_pc() { [ -n "$PKG_CONFIG_BIN" ] && "$PKG_CONFIG_BIN" --exists "$1" 2>/dev/null; }
DLPACK_DIR=""
probe() {  # fills MISSING with what the build lacks
  MISSING=()
  [ -n "$PKG_CONFIG_BIN" ] || MISSING+=(pkg-config)
  have_pc fftw3f && have_header fftw3.h || MISSING+=(fftw3f)
  { have_header png.h && have_lib png; } || MISSING+=(libpng)
  { have_header zlib.h && have_lib z; } || MISSING+=(zlib)
  { printf '#include <stdio.h>\n#include <jpeglib.h>\n' | "$CC_BIN" -E -x c - "${EXTRA_INC[@]}" \
      >/dev/null 2>&1 && have_lib jpeg; } || MISSING+=(libjpeg)
  { have_header tiffio.h && have_lib tiff; } || MISSING+=(libtiff)
  { have_pc libwebp && have_pc libwebpmux && have_pc libwebpdemux; } || MISSING+=(libwebp)
  { have_header OpenEXR/openexr.h && { have_lib OpenEXRCore-3_1 || have_lib OpenEXRCore-3_2 ||
      have_lib OpenEXRCore-3_3 || have_lib OpenEXRCore; }; } || MISSING+=(openexr)
  have_pc cmocka || MISSING+=(cmocka)
  if [ -z "$DLPACK_DIR" ] && ! have_header dlpack/dlpack.h; then MISSING+=(dlpack); fi
  printf 'int main(void){return 0;}\n' | "$CC_BIN" -fopenmp -x c - -o /dev/null >/dev/null 2>&1 || MISSING+=(openmp)
}
use_carried_debs() {
  local debs=("$DEPS_DIR"/*.deb)
  [ -e "${debs[0]}" ] || return 1
  echo "unpacking ${#debs[@]} carried Debian packages from build-deps/ into $DEPS_PREFIX"
  rm -rf "$DEPS_PREFIX"; mkdir -p "$DEPS_PREFIX"
  local d
  for d in "${debs[@]}"; do
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$d" "$DEPS_PREFIX" || echo "  could not unpack $(basename "$d")"
    else  # no dpkg: the .deb is an ar archive holding data.tar.*
      "$PY" - "$d" "$DEPS_PREFIX" <<'EOF' || echo "  could not unpack $(basename "$d")"
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n"
pos = 8
while pos + 60 <= len(data):
    name, size = data[pos:pos + 16].decode().strip(), int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.rstrip("/").startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
EOF
    fi
  done
  local P=$DEPS_PREFIX/usr LIBD=$DEPS_PREFIX/usr/lib/$ARCH_TRIPLET
  # absolute symlinks (zlib1g-dev's libz.so -> /lib/.../libz.so.1.2.13) point at the system's
  # files, which may be another version or absent: point them at the carried ones instead
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    [ -e "$DEPS_PREFIX$target" ] && ln -sfn "$DEPS_PREFIX$target" "$link"
  done < <(find "$DEPS_PREFIX" -type l -lname '/*')
  # .pc files name /usr: point them at the prefix
  find "$DEPS_PREFIX" -name '*.pc' -exec sed -i -E \
    "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\\1=$P#" {} +
  # multiarch headers (jconfig.h, tiffconf.h ...) also beside the others: gcc searches
  # /usr/include/<triplet> by itself, but not <prefix>/include/<triplet>
  if [ -d "$P/include/$ARCH_TRIPLET" ]; then
    for f in "$P/include/$ARCH_TRIPLET"/*; do
      [ -e "$P/include/$(basename "$f")" ] || ln -s "$f" "$P/include/$(basename "$f")"
    done
  fi
  [ -n "$PKG_CONFIG_BIN" ] || { PKG_CONFIG_BIN=$P/bin/pkgconf; export PKG_CONFIG=$PKG_CONFIG_BIN; }
  export PKG_CONFIG_PATH=$LIBD/pkgconfig:$P/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$P${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # The loader gets only the carried libraries the system lacks (its own are never shadowed:
  # torch, cupy and the CUDA libraries keep theirs); lumen's programs find the rest through
  # the RUNPATH CMake gives them.
  local fb=$DEPS_PREFIX/fallback-lib so name have
  mkdir -p "$fb"
  for so in "$LIBD"/lib*.so.[0-9]*; do
    name=$(basename "$so")
    [[ $name =~ ^lib.*\.so\.[0-9]+$ ]] || continue   # sonames only: libpng16.so.16
    have=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF}' | while read -r f; do
             [ -e "$f" ] && echo "$f"; done | head -1)
    if [ -z "$have" ]; then ln -sf "$so" "$fb/$name"; fi
  done
  echo "carried run-time libraries the system lacks: $(ls "$fb" | tr '\n' ' ')"
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$fb
  EXTRA_INC=(-I"$P/include" -I"$P/include/$ARCH_TRIPLET")
  # shellcheck disable=SC2054  # one linker option, commas included
  EXTRA_LIB=(-L"$LIBD" -Wl,-rpath-link,"$LIBD")
  [ -f "$P/include/dlpack/dlpack.h" ] && DLPACK_DIR=$P/include
  return 0
}
python_dlpack() {  # a dlpack.h from a Python package (cupy, torch), wrapped as dlpack/dlpack.h
  local f
  f=$("$PY" - <<'EOF' 2>/dev/null
import os, site, sysconfig
roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
best = []
for root in roots:
    for d, _, files in os.walk(root):
        if "dlpack.h" in files:
            p = os.path.join(d, "dlpack.h")
            try:
                text = open(p, errors="replace").read()
            except OSError:
                continue
            if "DLManagedTensor" in text and "kDLCUDAManaged" in text:
                best.append((0 if p.endswith("dlpack/dlpack.h") else 1, p))
print(sorted(best)[0][1] if best else "")
EOF
)
  [ -n "$f" ] || return 1
  mkdir -p /tmp/lumen-gpu-dlpack/dlpack
  printf '/* gpu-check.sh: the DLPack header of a Python package */\n#include "%s"\n' "$f" \
    > /tmp/lumen-gpu-dlpack/dlpack/dlpack.h
  DLPACK_DIR=/tmp/lumen-gpu-dlpack
  echo "dlpack/dlpack.h: using $f"
}
probe
DEPS_NOTE=""
if [ ${#MISSING[@]} -gt 0 ]; then
  echo "the system lacks: ${MISSING[*]}"
  if use_carried_debs; then
    probe
    DEPS_NOTE="carried from build-deps/; "
  else
    echo "no build-deps/*.deb to fall back on (make them on a Debian 12 machine with"
    echo "  bash scripts/gpu-check.sh --fetch-deps, and carry build-deps with the run)"
  fi
fi
if [ -z "$DLPACK_DIR" ] && ! have_header dlpack/dlpack.h && python_dlpack; then
  probe
fi
CMAKE_EXTRA=()
TESTS_NOTE=""
if printf '%s\n' "${MISSING[@]}" | grep -qx cmocka; then
  CMAKE_EXTRA+=(-DLUMEN_TESTS=OFF)
  TESTS_NOTE="cmocka missing: C tests not built (-DLUMEN_TESTS=OFF)"
  echo "$TESTS_NOTE"
fi
[ -n "$DLPACK_DIR" ] && CMAKE_EXTRA+=(-DDLPACK_INCLUDE_DIR="$DLPACK_DIR")
PYH=$("$PY" - 2>&1 <<'EOF' | tail -1
import os, sysconfig
import numpy  # noqa: F401  (CMake's FindPython3 NumPy needs it)
h = os.path.join(sysconfig.get_paths()["include"], "Python.h")
print("ok" if os.path.exists(h) else "no Python.h at " + h)
EOF
)
[ "$PYH" = ok ] || echo "Python package: $PYH (CMake will skip the package: no Python tests, no bench)"
for dep in pkg-config fftw3f libpng zlib libjpeg libtiff libwebp openexr cmocka dlpack openmp; do
  if printf '%s\n' "${MISSING[@]}" | grep -qx "$dep"; then s=MISSING; else s=found; fi
  printf '  %-11s %s\n' "$dep" "$s"
done
CORE_MISSING=$(printf '%s\n' "${MISSING[@]}" | grep -vx -e cmocka -e dlpack | tr '\n' ' ')
if [ -n "${CORE_MISSING// /}" ]; then
  record dependencies FAIL "${DEPS_NOTE}the core needs: $CORE_MISSING- fetch them with --fetch-deps and carry build-deps"
elif [ ${#MISSING[@]} -gt 0 ] || [ "$PYH" != ok ]; then
  record dependencies PASS "${DEPS_NOTE}degraded: missing ${MISSING[*]:-nothing}${TESTS_NOTE:+; $TESTS_NOTE}; python headers: $PYH"
else
  record dependencies PASS "${DEPS_NOTE}all found"
fi

# ---- 3 configure ----------------------------------------------------------------------------
header 3 configure
wipe_build() {  # everything but this run's logs
  find "$BUILD" -mindepth 1 -maxdepth 1 ! -name gpu-check -exec rm -rf {} +
}
if [ "${GPU_CHECK_FRESH:-0}" = 1 ] || { [ -f "$BUILD/CMakeCache.txt" ] && \
     ! grep -q "^CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT\$" "$BUILD/CMakeCache.txt"; }; then
  echo "wiping $BUILD (fresh build asked for, or a cache from another tree)"
  wipe_build
fi
GEN=(); command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=${GEN[1]:-Unix Makefiles}\$" "$BUILD/CMakeCache.txt"; then
  echo "wiping $BUILD (made with another generator)"
  wipe_build
fi
CUDA_FLAGS=(-DLUMEN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
[ -n "$NVCC" ] && CUDA_FLAGS+=(-DCMAKE_CUDA_COMPILER="$NVCC")
cmake_knows_cuda() {  # does any CMakeLists.txt / *.cmake of the tree define LUMEN_CUDA?
  find . \( -path './build*' -o -path './.git' \) -prune -o \
    \( -name CMakeLists.txt -o -name '*.cmake' \) -exec grep -ls LUMEN_CUDA {} + 2>/dev/null | grep -q .
}
cmake_knows_cuda || echo "NOTE: no CMakeLists.txt of this tree mentions LUMEN_CUDA: the CUDA module's CMake part is not here yet, so no CUDA module will be built"
CONFIGURE=(cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release "${CUDA_FLAGS[@]}"
           -DPython3_EXECUTABLE="$(command -v "$PY" || echo "$PY")" "${CMAKE_EXTRA[@]}")
echo "+ ${CONFIGURE[*]}"
CONFIGURED=0
if ! command -v cmake >/dev/null 2>&1; then
  record configure FAIL "no cmake"
elif timeout 180 "${CONFIGURE[@]}" > "$BUILD_LOG" 2>&1; then
  CONFIGURED=1
  # what CMake said about CUDA, Python and the tests, and its warnings in full
  grep -iE "^-- .*(cuda|python|numpy|dlpack|cmocka|fftw|not found|skipp)" "$BUILD_LOG" | head -20
  awk '/^CMake (Warning|Deprecation)/{p=1} p{print} /^$/{if(p)n++; if(n>=2){p=0;n=0}}' "$BUILD_LOG" | head -40
  record configure PASS "${TESTS_NOTE:-tests on}"
else
  tail -40 "$BUILD_LOG"
  record configure FAIL "see the lines above and $BUILD_LOG"
fi

# ---- 4 build --------------------------------------------------------------------------------
header 4 build
BUILT=0
if [ $CONFIGURED = 1 ]; then
  KEEP=(); [ ${#GEN[@]} -gt 0 ] && KEEP=(-- -k 0) || KEEP=(-- -k)
  echo "+ cmake --build $BUILD -j $(nproc) ${KEEP[*]}"
  if timeout "$(budget 300 240)" cmake --build "$BUILD" -j "$(nproc)" "${KEEP[@]}" >> "$BUILD_LOG" 2>&1; then
    BUILT=1
    grep -E "warning:" "$BUILD_LOG" | sort -u | head -20
    record build PASS "log: $BUILD_LOG"
  else
    grep -E "error|Error|FAILED" "$BUILD_LOG" | head -40
    tail -15 "$BUILD_LOG"
    # what did build is still used below
    [ -x "$BUILD/lumen" ] && BUILT=2
    record build FAIL "some targets failed; see the errors above and $BUILD_LOG"
  fi
else
  record build SKIP "not configured"
fi
export LUMEN_BIN=$ROOT/$BUILD/lumen

# ---- 5 the CUDA module ----------------------------------------------------------------------
header 5 "CUDA module"
MOD=$BUILD/lumen-modules/liblumen_cuda.so
if [ -f "$MOD" ]; then
  ls -l "$MOD"
  if command -v ldd >/dev/null 2>&1; then
    ldd "$MOD" | grep -E "cu|not found" | sed 's/^/  /'
  fi
  # conv loads libcudnn.so.9 at run time: does this machine's cuDNN have every entry it uses?
  DNN_NOTE=""
  if [ -x "$BUILD/lumen_cudnn_symbols" ]; then
    DNN_NOTE=$("$BUILD/lumen_cudnn_symbols" 2>&1 | tail -1)
    echo "cuDNN: $DNN_NOTE"
  fi
  if command -v ldd >/dev/null 2>&1 && ldd "$MOD" | grep -q "not found"; then
    record "CUDA module" FAIL "$MOD has unresolved libraries (above)"
  else
    record "CUDA module" PASS "$MOD${DNN_NOTE:+; $DNN_NOTE}"
  fi
elif [ $BUILT = 0 ] && [ $CONFIGURED = 0 ]; then
  record "CUDA module" SKIP "nothing built"
else
  if cmake_knows_cuda; then
    grep -iE "cuda" "$BUILD_LOG" | grep -iE "error|not found|warn" | head -20
    record "CUDA module" FAIL "$MOD was not built (LUMEN_CUDA is known to CMake: see $BUILD_LOG)"
  else
    record "CUDA module" FAIL "$MOD was not built: no CMakeLists.txt defines LUMEN_CUDA yet"
  fi
fi

# ---- 6 lumen info ---------------------------------------------------------------------------
header 6 "lumen info"
LUMEN_HAS_CUDA=0
if [ -x "$BUILD/lumen" ]; then
  "$BUILD/lumen" info; rc=$?
  if "$BUILD/lumen" info --json 2>/dev/null | grep -q '"backend": *"cuda"'; then LUMEN_HAS_CUDA=1; fi
  if [ $rc -ne 0 ]; then
    record "lumen info" FAIL "exit $rc"
  elif [ -n "$GPU_NAME" ] && [ $LUMEN_HAS_CUDA = 0 ]; then
    echo "--- LUMEN_LOG=info $BUILD/lumen info (why is there no CUDA device?):"
    LUMEN_LOG=info "$BUILD/lumen" info 2>&1 | head -30
    record "lumen info" FAIL "the machine has $GPU_NAME but lumen lists no CUDA device"
  elif [ $LUMEN_HAS_CUDA = 1 ]; then
    record "lumen info" PASS "lists a CUDA device"
  else
    LUMEN_LOG=info "$BUILD/lumen" info 2>&1 | grep -i "module\|cuda" | head -10
    record "lumen info" PASS "no GPU here, and lumen lists none"
  fi
else
  record "lumen info" SKIP "$BUILD/lumen was not built"
fi

# ---- 7, 8 C tests ---------------------------------------------------------------------------
run_ctest() {  # run_ctest NUMBER KEY NAME ARGS...
  local num=$1 key=$2 name=$3; shift 3
  header "$num" "$name"
  if skipped "$key"; then record "$name" SKIP "GPU_CHECK_SKIP"; return; fi
  if [ ! -f "$BUILD/CTestTestfile.cmake" ] || ! grep -q "^LUMEN_TESTS:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null; then
    record "$name" SKIP "${TESTS_NOTE:-tests not configured}"; return
  fi
  local n
  n=$(cd "$BUILD" && ctest -N "$@" 2>/dev/null | sed -n 's/^Total Tests: //p')
  if [ "${n:-0}" = 0 ]; then
    record "$name" SKIP "no ctest test matches: ctest -N $*"; return
  fi
  if [ "$(left)" -lt 60 ]; then record "$name" SKIP "out of time ($(left)s left)"; return; fi
  local t rc
  t=$(budget 200 240)
  echo "+ (cd $BUILD && ctest $* --output-on-failure -j 4) (${n} tests, timeout ${t}s; all of it in $CTEST_LOG)"
  echo "---- ctest $*" >> "$CTEST_LOG"
  local mark
  mark=$(wc -l < "$CTEST_LOG")
  # the log gets everything; the transcript leaves out cmocka's per-test RUN/OK/SKIPPED lines
  (cd "$BUILD" && timeout "$t" ctest "$@" --output-on-failure -j 4 --timeout 180) 2>&1 \
    | tee -a "$CTEST_LOG" | grep -avE '^[0-9]+: \[ +(RUN|OK|SKIPPED) +\] ' | tail -60
  rc=${PIPESTATUS[0]}
  local skips
  skips=$(tail -n +"$((mark + 1))" "$CTEST_LOG" | grep -c "no CUDA device: skipped")
  if [ "$rc" = 0 ] && [ -n "$GPU_NAME" ] && [ "$skips" -gt 0 ]; then
    tail -n +"$((mark + 1))" "$CTEST_LOG" | grep -B2 "no CUDA device: skipped" | head -20
    record "$name" FAIL "$skips tests skipped for want of a CUDA device although $GPU_NAME is here"
    return
  fi
  case $rc in
    0) if [ "$skips" -gt 0 ]; then record "$name" PASS "$n tests; $skips skipped: no CUDA device"
       else record "$name" PASS "$n tests"; fi ;;
    124) record "$name" FAIL "timed out after ${t}s" ;;
    *) record "$name" FAIL "ctest exit $rc: see the failures above" ;;
  esac
}
if [ $BUILT = 0 ]; then
  header 7 "C tests, cuda"; record "C tests, cuda" SKIP "not built"
  header 8 "C tests, rest"; record "C tests, rest" SKIP "not built"
else
  run_ctest 7 ctest-cuda "C tests, cuda" -R cuda -V
  run_ctest 8 ctest-rest "C tests, rest" -E cuda
fi

# ---- 9 Python tests -------------------------------------------------------------------------
header 9 "Python tests"
PKG=$BUILD/python
if skipped pytest; then
  record "Python tests" SKIP "GPU_CHECK_SKIP"
elif ! ls "$PKG"/lumen/_lumen*.so >/dev/null 2>&1; then
  record "Python tests" SKIP "the Python package was not built: $([ "$PYH" = ok ] && echo 'see configure/build' || echo "$PYH")"
elif ! "$PY" -c 'import pytest, cv2' >/dev/null 2>&1; then
  record "Python tests" SKIP "$PY lacks pytest or cv2"
elif [ "$(left)" -lt 120 ]; then
  record "Python tests" SKIP "out of time ($(left)s left)"
else
  if [ -n "${GPU_CHECK_PYTEST:-}" ]; then
    read -r -a PYTESTS <<< "$GPU_CHECK_PYTEST"
  else
    mapfile -t PYTESTS < <(ls tests/python/test_py_*.py tests/python/test_phos_compat.py \
      tests/python/test_cli_devices.py tests/python/*cuda*.py tests/python/*gpu*.py 2>/dev/null | sort -u)
  fi
  T=$(budget 240 200)
  echo "+ PYTHONPATH=$PKG $PY -m pytest -q ${PYTESTS[*]} (timeout ${T}s; all of it in $PYTEST_LOG)"
  PYTHONPATH=$ROOT/$PKG timeout "$T" "$PY" -m pytest -q -p no:cacheprovider -rfEs \
    "${PYTESTS[@]}" 2>&1 | tee "$PYTEST_LOG" | tail -80
  rc=${PIPESTATUS[0]}
  case $rc in
    0) record "Python tests" PASS "${#PYTESTS[@]} files" ;;
    5) record "Python tests" SKIP "pytest collected no tests" ;;
    124) record "Python tests" FAIL "timed out after ${T}s" ;;
    *) record "Python tests" FAIL "pytest exit $rc: see the failures above" ;;
  esac
fi

# ---- 10 benchmark ---------------------------------------------------------------------------
header 10 benchmark
BENCH_STATUS=""
MD_FILE=""
if skipped bench; then
  record benchmark SKIP "GPU_CHECK_SKIP"
elif ! ls "$PKG"/lumen/_lumen*.so >/dev/null 2>&1; then
  record benchmark SKIP "the Python package was not built"
elif [ "$(left)" -lt 45 ]; then
  record benchmark SKIP "out of time ($(left)s left)"
else
  BARGS=(--build "$BUILD" --markdown "$MD_DEST" --json "$JSON")
  if [ "${GPU_CHECK_QUICK:-0}" = 1 ] || [ "$(left)" -lt 240 ]; then BARGS+=(--quick); fi
  [ -n "${GPU_CHECK_BENCH_ARGS:-}" ] && read -r -a MORE <<< "$GPU_CHECK_BENCH_ARGS" && BARGS+=("${MORE[@]}")
  T=$(( $(left) - 15 ))
  echo "+ $PY bench/gpu_bench.py ${BARGS[*]} (timeout ${T}s)"
  MARK=$(mktemp)
  sleep 1
  GPU_CHECK_RUN="bash scripts/gpu-check.sh" PYTHONUNBUFFERED=1 timeout "$T" "$PY" \
    bench/gpu_bench.py "${BARGS[@]}"
  rc=$?
  MD_FILE=$(find "$MD_DEST" -maxdepth 1 -name 'benchmarks-*.md' -newer "$MARK" 2>/dev/null | head -1)
  rm -f "$MARK"
  case $rc in
    0) record benchmark PASS "every result verified, every target met" ;;
    3) record benchmark MISSED "results verified; a target was missed or not judged (table above)"; BENCH_STATUS=missed ;;
    4) if [ -n "$GPU_NAME" ]; then record benchmark FAIL "gpu_bench found no CUDA device although nvidia-smi lists $GPU_NAME"
       else record benchmark SKIP "no CUDA device here"; fi ;;
    5) record benchmark FAIL "lumen has no CUDA device (module missing or not loaded: LUMEN_LOG=info lines above)" ;;
    124) record benchmark FAIL "timed out after ${T}s (GPU_CHECK_QUICK=1 shortens it)" ;;
    *) record benchmark FAIL "gpu_bench exit $rc: a result mismatch or an error (FATAL/ERROR lines above)" ;;
  esac
fi

# ---- 11 Vulkan ------------------------------------------------------------------------------
header 11 Vulkan
VK_SPEC=""
if [ -x "$BUILD/lumen" ]; then
  # the first Vulkan device that is not a software one (lavapipe): the GPU
  VK_SPEC=$("$BUILD/lumen" info --json 2>/dev/null | "$PY" -c '
import json, sys
devs = json.load(sys.stdin)["devices"]
vk = [d for d in devs if d["backend"] == "vulkan"]
gpu = [i for i, d in enumerate(vk) if d["kind"] != "software"]
print(f"vulkan:{gpu[0]}" if gpu else "")' 2>/dev/null)
fi
if skipped vulkan; then
  record Vulkan SKIP "GPU_CHECK_SKIP"
elif [ ! -f "$BUILD/lumen-modules/liblumen_vulkan.so" ]; then
  record Vulkan SKIP "no liblumen_vulkan.so: the build lacked libvulkan-dev or glslc"
elif [ -z "$VK_SPEC" ]; then
  LUMEN_LOG=debug "$BUILD/lumen" info 2>&1 | grep -i vulkan | head -10
  record Vulkan SKIP "the module lists no Vulkan GPU (no ICD for it in this machine's loader)"
elif [ "$(left)" -lt 60 ]; then
  record Vulkan SKIP "out of time ($(left)s left)"
else
  T=$(budget 240 20)
  echo "+ ctest -R vulkan (timeout ${T}s), then lumen bench --device $VK_SPEC and --device cuda:0"
  (cd "$BUILD" && timeout "$T" ctest -R vulkan --output-on-failure --timeout 180) 2>&1 | tail -30
  rc=${PIPESTATUS[0]}
  for dev in "$VK_SPEC" cuda:0; do
    [ "$dev" = cuda:0 ] && [ $LUMEN_HAS_CUDA = 0 ] && continue
    timeout 120 "$BUILD/lumen" bench --device "$dev" --strict --repeat 5 \
      --case filter2d_k3,filter2d_k15,filter2d_k61,gaussian_s3,gaussian_fast_s30 2>&1 | tail -8
  done
  if [ "$rc" = 0 ]; then record Vulkan PASS "$VK_SPEC: tests pass; bench tables above"
  else record Vulkan FAIL "ctest -R vulkan exit $rc on $VK_SPEC"; fi
fi

# ---- summary --------------------------------------------------------------------------------
ELAPSED=$(( $(date +%s) - START ))
echo
echo "==== gpu-check summary: ${GPU_NAME:-no GPU}, ${ELAPSED}s"
FAILED=0
for i in "${!NAMES[@]}"; do
  printf '  %-2d %-16s %-7s %s\n' "$((i + 1))" "${NAMES[$i]}" "${STATUS[$i]}" "${NOTES[$i]}"
  [ "${STATUS[$i]}" = FAIL ] && FAILED=1
done
echo "  files:"
for f in "$LOG" "$BUILD_LOG" "$CTEST_LOG" "$PYTEST_LOG" "$JSON" "$MD_FILE"; do
  [ -f "$f" ] && echo "    $f"
done
if [ -n "${OUT:-}" ]; then
  echo "  (under \$OUT: the run tool brings them back; commit benchmarks-*.md as docs/benchmarks-<gpu>.md)"
fi
if [ $FAILED = 1 ]; then EXIT=1; elif [ "$BENCH_STATUS" = missed ]; then EXIT=3; else EXIT=0; fi
if [ -n "${MD_FILE:-}" ] && [ -f "$MD_FILE" ]; then  # the page carries the test results too
  {
    echo
    echo "## Tests and build (scripts/gpu-check.sh, same run)"
    echo
    echo "| step | result | note |"
    echo "|---|---|---|"
    for i in "${!NAMES[@]}"; do
      echo "| $((i + 1)) ${NAMES[$i]} | ${STATUS[$i]} | ${NOTES[$i]//|//} |"
    done
    echo
    echo "gpu-check exit status $EXIT, ${ELAPSED} s in all."
  } >> "$MD_FILE"
  echo "  appended the step results to $MD_FILE"
fi
echo "gpu-check: exit $EXIT"
exec >&- 2>&-   # let tee finish writing the log before the run tool collects it
wait "$TEE_PID" 2>/dev/null
exit $EXIT
