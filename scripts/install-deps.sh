#!/usr/bin/env bash
# Installs the Debian packages lumen needs that are not installed yet.
# Usage: scripts/install-deps.sh [build|test|bench|fuzz]
#        scripts/install-deps.sh --list build|test|bench   (print the list, install nothing)
set -euo pipefail
list=false
if [ "${1:-}" = --list ]; then
  list=true
  shift
fi
pkgs=(gcc make cmake ninja-build pkg-config libpng-dev libjpeg-dev libtiff-dev libwebp-dev
      libopenexr-dev libfftw3-dev
      python3 python3-dev python3-numpy libdlpack-dev)
if [ "${1:-build}" = test ]; then
  pkgs+=(libcmocka-dev python3-opencv python3-scipy python3-pytest python3-torch
         python3-pip python3-setuptools python3-wheel time
         # Pillow: the pillow rule's peer (tests/python/test_resize.py, bench/resize_bench.py)
         python3-pil
         # the Vulkan module and its tests on lavapipe (docs/vulkan.md); not needed by make run
         libvulkan-dev glslc mesa-vulkan-drivers
         # the web studio's test in a headless browser (tests/python/test_studio.py, docs/studio.md)
         chromium chromium-driver python3-selenium
         # lumen.dask and its tests: scale-out on Dask, Zarr images (docs/scale-out.md)
         python3-dask python3-distributed python3-zarr)
fi
# make bench: the peers lumen.bench times (cv2 is required, SciPy and torch are left out with a
# note when missing) and matplotlib for its chart (bench/charts.py); not needed by make run
if [ "${1:-build}" = bench ]; then
  pkgs+=(python3-opencv python3-scipy python3-torch python3-matplotlib)
fi
# make fuzz: libFuzzer and the sanitizer runtimes of Debian's clang, clang's OpenMP runtime, and
# cmocka (the harnesses share the C tests' tolerance table)
if [ "${1:-build}" = fuzz ]; then
  pkgs+=(clang libclang-rt-14-dev libomp-14-dev libcmocka-dev)
fi
# Wanted, not needed: make run films the photograph in matplotlib's sample data (arch-all, 2.7 MB,
# fonts its only dependencies; scripts/demo.sh), else its generated scene. A failed install is a
# note, never a failed make run.
optional=(python-matplotlib-data)
if $list; then
  printf '%s\n' "${pkgs[@]}" "${optional[@]}"
  exit 0
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
opt_missing=()
for p in "${optional[@]}"; do
  installed "$p" || opt_missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#opt_missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# Needed packages need the update; optional ones try without it.
$SUDO apt-get update -qq || [ ${#missing[@]} -eq 0 ]
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#opt_missing[@]} -gt 0 ]; then
  echo "installing (optional): ${opt_missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${opt_missing[@]}" ||
    echo "note: could not install ${opt_missing[*]}; make run films its generated scene instead" >&2
fi
