// The FFT filter's first pass (fft.c, docs/vulkan-fft.md): one workgroup gathers one row of a
// tile's input window (rows and columns mapped by the border rule, so every border mode is
// exact; zeros beyond the window) and transforms it along x in shared memory, writing the
// row's spectrum into the tile's slot of Work. x: the row, y: the tile within the group.
// It also folds the window's largest |x| into the tile's flag (atomicMax on float bits), so
// that tiles with NaN/Inf, or too large for the transform, are summed directly later.
// KERNEL = 1: the same for the kernel's rows (taps zero-padded to nh x nw), written into the
// spectrum area of Consts, once per call.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "fft_common.glsl"

layout(constant_id = 2) const int SRC_DT = DT_F32;
layout(constant_id = 3) const int KERNEL = 0;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Work { uint work[]; };
layout(std430, set = 0, binding = 2) buffer Consts { float consts[]; };

DEFINE_LOAD(load_src, src)

vec2 twiddle_w(int m)
{
    return vec2(consts[2 * m], consts[2 * m + 1]);
}
DEFINE_FFT(fft_w, twiddle_w)

void kernel_row(int i)
{
    if (i >= pc.kh) return; // zero rows: fft_cols reads zeros there
    for (int x = int(gl_LocalInvocationID.x); x < pc.nw; x += WG)
        fft_buf[x] = vec2(x < pc.kw ? consts[consts_taps() + i * pc.kw + x] : 0.0, 0.0);
    int res = fft_w(pc.nw);
    int out_ = consts_spectrum() + 2 * i * pc.nw;
    for (int x = int(gl_LocalInvocationID.x); x < pc.nw; x += WG) {
        consts[out_ + 2 * x] = fft_buf[res + x].x;
        consts[out_ + 2 * x + 1] = fft_buf[res + x].y;
    }
}

void tile_row(int i, Tile t)
{
    int rows = t.th + pc.kh - 1, cols = t.tw + pc.kw - 1;
    if (i >= rows) return; // zero rows: fft_cols reads zeros there
    int sy = border_index(t.y0 - pc.ay + i, pc.h, pc.border);
    int base = pc.s.off + t.b * pc.s.sn + t.ch * pc.s.sc + sy * pc.s.sh;
    uint mag = 0u;
    for (int x = int(gl_LocalInvocationID.x); x < pc.nw; x += WG) {
        float v = 0.0;
        if (x < cols) {
            int sx = border_index(t.x0 - pc.ax + x, pc.w, pc.border);
            v = sy < 0 || sx < 0 ? pc.border_value : load_src(SRC_DT, base + sx * pc.s.sw);
            mag = max(mag, magnitude_bits(v));
        }
        fft_buf[x] = vec2(v, 0.0);
    }
    if (mag != 0u) atomicMax(work[t.id], mag);
    int res = fft_w(pc.nw);
    for (int x = int(gl_LocalInvocationID.x); x < pc.nw; x += WG) {
        int o = slot_word(t, i * pc.nw + x);
        work[o] = floatBitsToUint(fft_buf[res + x].x);
        work[o + 1] = floatBitsToUint(fft_buf[res + x].y);
    }
}

void main()
{
    int i = int(gl_WorkGroupID.x);
    if (KERNEL != 0)
        kernel_row(i);
    else
        tile_row(i, tile_of(int(gl_WorkGroupID.y)));
}
