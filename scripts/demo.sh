#!/bin/sh
# The main job of `make run`: the lumen tool makes its own test scene and kernels,
# then blurs and filters the scene, printing device, isa, method, threads and time
# for every op (--verbose), and films a photograph (lumen film: before | after pictures,
# time per megapixel). Results are PNGs under out/ for a person to look at.
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

# Film (docs/film.md): a real photograph that ships with a Debian package (matplotlib's sample
# data: Grace Hopper, 512x600; scripts/install-deps.sh installs it), else the generated scene.
# Each stock writes film-STOCK.png and film-STOCK-compare.png (before | after).
# LUMEN_DEMO_PHOTO=PATH films another picture.
photo=${LUMEN_DEMO_PHOTO:-/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg}
if [ -r "$photo" ]; then
    film_in=$photo
else
    printf '\nnote: no sample photograph (%s, Debian package python-matplotlib-data):\n' "$photo"
    printf 'filming the generated scene instead\n'
    film_in=$out/scene.png
fi
step film --list-stocks
films=portra400
# CineStill 800T has no anti-halation layer: the reddest halation, when the library has it.
if "$bin" film --list-stocks | grep -q '^cinestill800t '; then
    films="$films cinestill800t"
fi
# Grain 0.3: Phos's grain is sized for its 3000-pixel working images (it resizes every photo so
# its short side is 3000 px); at this photo's 512 px the default grain would drown the face.
for stock in $films; do
    step film "$film_in" "$out/film-$stock.png" --stock "$stock" --grain 0.3 --compare
done
# The time per megapixel on a phone-sized image (3000x2000, 6 MP; .npy: no codec in the time).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step scene "$tmp/scene-6mp.npy" --size 3000x2000
step film "$tmp/scene-6mp.npy" "$tmp/film-6mp.npy" --stock portra400

printf '\nOutputs in %s/:\n' "$out"
for f in scene blur_sigma3 blur_1.5x8 sharpen motion gauss9 streak bloom_sigma40 \
    bloom_sigma40_fast box_15x3 box_31_constant; do
    printf '  %s/%s.png\n' "$out" "$f"
done
for stock in $films; do
    printf '  %s/film-%s.png  %s/film-%s-compare.png (before | after)\n' "$out" "$stock" \
        "$out" "$stock"
done
printf 'Kernels: %s/sharpen.npy %s/motion.npy %s/gauss.npy %s/streak.npy\n' "$out" "$out" "$out" "$out"
