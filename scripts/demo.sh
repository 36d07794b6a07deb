#!/bin/sh
# The main job of `make run`: the lumen tool makes its own test scene and kernels,
# then blurs and filters the scene, printing device, isa, method, threads and time
# for every op (--verbose). Results are PNGs under out/ for a person to look at.
# Usage: scripts/demo.sh [LUMEN_BINARY] [OUT_DIR]    (defaults: build/lumen out)
set -eu

bin=${1:-build/lumen}
out=${2:-out}

if [ ! -x "$bin" ]; then
    echo "demo: '$bin' is not an executable; build it first (make build)" >&2
    exit 1
fi
mkdir -p "$out"

# Echo each command before running it, so the log reads like a tutorial.
step() {
    printf '\n$ lumen %s\n' "$*"
    "$bin" "$@"
}

step info
step scene "$out/scene.png" --size 1280x960
step kernel "$out/sharpen.npy" --kind sharpen
step kernel "$out/motion.npy" --kind motion --ksize 21
step kernel "$out/gauss.npy" --kind gaussian --ksize 9
step kernel "$out/streak.npy" --kind motion --ksize 101

step blur "$out/scene.png" "$out/blur_sigma3.png" --sigma 3 --verbose
step blur "$out/scene.png" "$out/blur_1.5x8.png" --sigma 1.5 --sigma-y 8 --border replicate --verbose
step filter "$out/scene.png" "$out/sharpen.png" --kernel "$out/sharpen.npy" --verbose
step filter "$out/scene.png" "$out/motion.png" --kernel "$out/motion.npy" --border reflect101 --verbose
# A rank-1 kernel: --method auto may pick the separable path.
step filter "$out/scene.png" "$out/gauss9.png" --kernel "$out/gauss.npy" --verbose
# Large kernels: auto takes the tiled FFT; the fast Gaussian's cost does not grow with sigma.
step filter "$out/scene.png" "$out/streak.png" --kernel "$out/streak.npy" --verbose
step blur "$out/scene.png" "$out/bloom_sigma40.png" --sigma 40 --verbose
step blur "$out/scene.png" "$out/bloom_sigma40_fast.png" --sigma 40 --precision fast --verbose
step box "$out/scene.png" "$out/box_15x3.png" --ksize 15,3 --verbose
step box "$out/scene.png" "$out/box_31_constant.png" --ksize 31 --border constant --value 0 --verbose

printf '\nOutputs in %s/:\n' "$out"
for f in scene blur_sigma3 blur_1.5x8 sharpen motion gauss9 streak bloom_sigma40 \
    bloom_sigma40_fast box_15x3 box_31_constant; do
    printf '  %s/%s.png\n' "$out" "$f"
done
printf 'Kernels: %s/sharpen.npy %s/motion.npy %s/gauss.npy %s/streak.npy\n' "$out" "$out" "$out" "$out"
