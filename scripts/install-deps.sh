#!/usr/bin/env bash
# Installs the Debian packages lumen needs that are not installed yet.
# Usage: scripts/install-deps.sh [build|test|fuzz]
#        scripts/install-deps.sh --list build|test   (print the list, install nothing)
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
         # the Vulkan module and its tests on lavapipe (docs/vulkan.md); not needed by make run
         libvulkan-dev glslc mesa-vulkan-drivers
         # the web studio's test in a headless browser (tests/python/test_studio.py, docs/studio.md)
         chromium chromium-driver python3-selenium)
fi
# make fuzz: libFuzzer and the sanitizer runtimes of Debian's clang, clang's OpenMP runtime, and
# cmocka (the harnesses share the C tests' tolerance table)
if [ "${1:-build}" = fuzz ]; then
  pkgs+=(clang libclang-rt-14-dev libomp-14-dev libcmocka-dev)
fi
if $list; then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
