#!/usr/bin/env bash
# The install test (CTest `install`): cmake --install into a temporary prefix, then the README's
# C example (examples/blur.c, which README.md shows verbatim) built against that prefix twice,
# with pkg-config and with find_package(lumen), and run. Also: liblumen.so exports only lumen_*
# and carries its soname, liblumen.a links with `pkg-config --static`, nothing of the build tree
# is in the installed library, and the installed library finds a module in
# <libdir>/lumen-modules on its own.
#
# usage: run.sh BUILD_DIR SOURCE_DIR LIBDIR VERSION CMAKE GENERATOR C_COMPILER MOCK_MODULE
set -euo pipefail
# (grep -q reads here-strings, never a pipe: with pipefail, a producer killed by SIGPIPE when
# grep -q stops early would fail the test at random.)
build=$1 src=$2 libdir=$3 version=$4 cmake=$5 generator=$6 cc=$7 mock=$8

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lumen-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
lib=$prefix/$libdir
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }
unset LUMEN_MODULE_PATH # the installed library must find modules without it

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
for f in include/lumen.h "$libdir/liblumen.so.$version" "$libdir/liblumen.a" \
         "$libdir/pkgconfig/lumen.pc" "$libdir/cmake/lumen/lumenConfig.cmake" \
         "$libdir/cmake/lumen/lumenConfigVersion.cmake" "$libdir/cmake/lumen/lumenTargets.cmake"; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for h in "$src"/include/*.h; do
  cmp -s "$h" "$prefix/include/${h##*/}" || fail "public header ${h##*/} not installed"
done
[ "$(readlink "$lib/liblumen.so.0")" = "liblumen.so.$version" ] || fail "liblumen.so.0 link"
[ "$(readlink "$lib/liblumen.so")" = liblumen.so.0 ] || fail "liblumen.so link"
grep -q 'SONAME *liblumen\.so\.0$' <<<"$(objdump -p "$lib/liblumen.so")" || fail "soname is not liblumen.so.0"
if [ -f "$build/lumen-modules/liblumen_cuda.so" ]; then
  [ -f "$lib/lumen-modules/liblumen_cuda.so" ] || fail "the CUDA module is not installed"
fi

step "liblumen.so exports the API only"
extra=$(nm -D --defined-only "$lib/liblumen.so" | awk '{print $3}' | grep -v '^lumen_' || true)
[ -z "$extra" ] || fail "exported beyond lumen_*: $(tr '\n' ' ' <<< "$extra" | head -c 400)"
grep -q ' T lumen_gaussian_blur$' <<<"$(nm -D --defined-only "$lib/liblumen.so")" || fail "API not exported"
! grep -qF "$build" "$lib/liblumen.so" || fail "the build tree's path is compiled into liblumen.so"

step "README.md shows examples/blur.c verbatim"
awk '/^```c$/ {on = 1; next} on && /^```$/ {exit} on' "$src/README.md" > "$tmp/readme.c"
cmp -s "$tmp/readme.c" "$src/examples/blur.c" ||
  { diff "$tmp/readme.c" "$src/examples/blur.c" >&2 || true; fail "README's C example differs from examples/blur.c"; }

# What the example prints: the blurred edge rises monotonically through the grey half's half,
# the sharpened edge saturates both ways (5*0 - 200 -> 0, 5*200 - 3*200 = 400 -> 255).
check() {
  local out
  out=$("$@") || fail "$1 exited $?"
  # shellcheck disable=SC2001
  sed 's/^/   /' <<< "$out"
  grep -Eq "^lumen $version, blur \([a-z]+ on [a-z0-9:]+\): [0-9]+ [0-9]+ [0-9]+ [0-9]+$" \
    <<<"$out" || fail "$1: blur line"
  read -r a b c d <<< "$(echo "$out" | head -1 | sed 's/.*: //')"
  if ! [ "$a" -le "$b" ] || ! [ "$b" -lt "$c" ] || ! [ "$c" -le "$d" ] ||
     [ $((b + c)) -lt 198 ] || [ $((b + c)) -gt 202 ]; then
    fail "$1: blurred edge $a $b $c $d"
  fi
  [ "$(echo "$out" | sed -n 2p)" = "sharpen: 0 0 255 200" ] || fail "$1: sharpen line"
}
export PKG_CONFIG_PATH=$lib/pkgconfig LUMEN_NUM_THREADS=2

step "cc examples/blur.c \$(pkg-config --cflags --libs lumen)"
[ "$(pkg-config --modversion lumen)" = "$version" ] || fail "pkg-config --modversion"
# shellcheck disable=SC2046
"$cc" -std=c17 -Wall -Wextra -Werror -o "$tmp/blur-pc" "$src/examples/blur.c" \
  $(pkg-config --cflags --libs lumen) -Wl,-rpath,"$lib"
check "$tmp/blur-pc"

step "liblumen.a with \$(pkg-config --static --libs lumen)"
static=$(pkg-config --static --libs lumen)
# shellcheck disable=SC2046,SC2086
"$cc" -std=c17 -o "$tmp/blur-static" "$src/examples/blur.c" $(pkg-config --cflags lumen) \
  ${static/-llumen/-l:liblumen.a}
! grep -q 'NEEDED.*liblumen' <<<"$(readelf -d "$tmp/blur-static")" || fail "blur-static needs liblumen.so"
check "$tmp/blur-static"

step "find_package(lumen) + target_link_libraries(app lumen::lumen)"
mkdir "$tmp/app"
cat > "$tmp/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(lumen 0.1 REQUIRED)
add_executable(app blur.c)
target_link_libraries(app PRIVATE lumen::lumen)
CMAKE
cp "$src/examples/blur.c" "$tmp/app/"
"$cmake" -S "$tmp/app" -B "$tmp/app/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/app.log" 2>&1 ||
  { cat "$tmp/app.log"; fail "configure the find_package project"; }
"$cmake" --build "$tmp/app/build" >> "$tmp/app.log" 2>&1 || { cat "$tmp/app.log"; fail "build it"; }
grep -q "liblumen.so.0 => $lib/liblumen.so.0" <<<"$(ldd "$tmp/app/build/app")" ||
  fail "app does not load the installed liblumen.so.0"
check "$tmp/app/build/app" # the build RPATH CMake gives it points into the prefix

step "the installed liblumen.so finds modules in $libdir/lumen-modules"
cat > "$tmp/devices.c" <<'C'
#include <lumen.h>
#include <stdio.h>
int main(void)
{
    for (int i = 0; i < lumen_device_count(); i++) {
        lumen_device_info d;
        if (lumen_device_get_info(i, &d) == LUMEN_OK) printf("%s\n", d.backend);
    }
    return 0;
}
C
# shellcheck disable=SC2046
"$cc" -std=c17 -o "$tmp/devices" "$tmp/devices.c" $(pkg-config --cflags --libs lumen) \
  -Wl,-rpath,"$lib"
before=$("$tmp/devices") || fail "devices exited $?"
! grep -qx mock <<< "$before" || fail "a mock module is found before it is installed"
mkdir -p "$lib/lumen-modules"
cp "$mock" "$lib/lumen-modules/"
after=$("$tmp/devices") || fail "devices exited $?"
echo "   devices: ${after//$'\n'/ }"
grep -qx mock <<< "$after" || fail "the mock module in $lib/lumen-modules is not found"
echo "install test passed"
