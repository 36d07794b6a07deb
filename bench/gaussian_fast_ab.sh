#!/bin/sh
# bench/gaussian_fast_ab.sh BASE_BUILD NEW_BUILD [THREADS ROUNDS CASE...]
# Links NEW_BUILD's gaussian_fast*.o (global symbols renamed new_*) with BASE_BUILD's
# liblumen.a into ${AB_OUT:-/tmp/gaussian_fast_ab} and runs it (default: 1 thread, 20 rounds, the
# issue 17 cases). Run from the source root, e.g. after `cp -r build build-base` and a rebuild.
set -e
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
tmp=$(mktemp -d)
syms="lumen_cpu_gaussian_fast lumen_cpu_gaussian_fast_isa lumen_gf_from_lanes_avx2
      lumen_gf_to_lanes_avx2 lumen_gf_kernels_avx2 lumen_gf_kernels_avx512 lumen_gf_kernels_generic"
args=""
for s in $syms; do args="$args --redefine-sym $s=new_$s"; done
(cd "$tmp" && ar x "$new/liblumen.a" gaussian_fast.c.o gaussian_fast_avx2.c.o \
    gaussian_fast_avx512.c.o)
for f in "$tmp"/*.o; do objcopy $args "$f"; done
gcc -O2 -std=c17 -fopenmp -Iinclude -Isrc -Isrc/core bench/gaussian_fast_ab.c "$tmp"/*.o \
    "$base/liblumen.a" -lfftw3f_omp -lfftw3f_threads -lfftw3f -lpng -ljpeg -ltiff -lm \
    -o ${AB_OUT:-/tmp/gaussian_fast_ab}
rm -r "$tmp"
[ $# -gt 0 ] || set -- 1 20 f32:1:2 f32:1:8 f32:1:30 f32:1:100 u8:1:2 u8:1:8 u8:1:30 u8:1:100 \
    f32:3:2 f32:3:8 f32:3:30 f32:3:100 u8:3:2 u8:3:8 u8:3:30 u8:3:100
nice -n -15 ${AB_OUT:-/tmp/gaussian_fast_ab} "$@"
