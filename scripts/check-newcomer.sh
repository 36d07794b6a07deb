#!/usr/bin/env bash
# Proves the README's first command, `make run`, works on a machine that has only what
# `make run` itself installs: it runs `make run` in a separate build folder with every package
# that only `make test` installs hidden from the configure step. CI machines have the test
# packages (make test installed them), so without this a configure step that needs one (as
# cmocka once was) would pass CI and fail for a newcomer.
#
# How packages are hidden: pkg-config (how CMake finds cmocka and FFTW here) is pointed at a
# copy of the system's .pc folders without the files of test-only packages. Test-only packages
# are the `test` list of scripts/install-deps.sh minus its `build` list.
#
# Usage: scripts/check-newcomer.sh [BUILD_DIR]   (default: build-newcomer)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-newcomer}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t build_pkgs < <(scripts/install-deps.sh --list build)
mapfile -t test_pkgs < <(scripts/install-deps.sh --list test)
hidden=()
for p in "${test_pkgs[@]}"; do
  printf '%s\n' "${build_pkgs[@]}" | grep -qxF "$p" && continue
  hidden+=("$p")
done
echo "check-newcomer: hiding the test-only packages: ${hidden[*]}"

# The .pc files those packages own.
: > "$tmp/hidden-files"
for p in "${hidden[@]}"; do
  dpkg-query -L "$p" 2>/dev/null | grep '\.pc$' >> "$tmp/hidden-files" || true
done

# A pkg-config folder holding every system .pc file but those.
mkdir "$tmp/pc"
IFS=: read -r -a pc_dirs <<< "$(pkg-config --variable pc_path pkg-config)"
for d in "${pc_dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*.pc; do
    [ -e "$f" ] || continue
    grep -qxF "$f" "$tmp/hidden-files" && continue
    [ -e "$tmp/pc/${f##*/}" ] || ln -s "$f" "$tmp/pc/${f##*/}"
  done
done
if [ -s "$tmp/hidden-files" ]; then
  echo "check-newcomer: hidden from pkg-config: $(xargs -n1 basename < "$tmp/hidden-files" | tr '\n' ' ')"
fi

rm -rf "$build"
log="$tmp/run.log"
if ! PKG_CONFIG_LIBDIR="$tmp/pc" PKG_CONFIG_PATH="" make --no-print-directory run \
    BUILD="$build" > "$log" 2>&1; then
  tail -40 "$log"
  echo "check-newcomer: FAIL: 'make run' needs a package that only 'make test' installs" >&2
  exit 1
fi
# The run build really went without the test packages (so the check can fail).
if [ -s "$tmp/hidden-files" ] && ! grep -q "cmocka not found" "$log"; then
  echo "check-newcomer: FAIL: cmocka was not hidden from the run build; the check proves nothing" >&2
  exit 1
fi
grep -q "^Outputs in" "$log" || {
  tail -20 "$log"
  echo "check-newcomer: FAIL: the demo printed nothing it should" >&2
  exit 1
}
echo "check-newcomer: 'make run' works with only the build packages ($build)"
