// The FFT filter's middle pass (fft.c, docs/vulkan-fft.md): one workgroup transforms one
// column of a tile's row spectra along y, multiplies it by the kernel's conjugate spectrum
// (already divided by nh nw: correlation, normalised) and transforms it back along y (the
// inverse as the forward transform of the conjugate; the conjugate is left for fft_scatter,
// whose real part does not see it). x: the column, y: the tile within the group. Tiles
// flagged for the direct sum are skipped. Rows at and beyond the window's height are zeros
// (fft_rows does not write them); only the rows fft_scatter reads are written back.
// KERNEL = 1: the kernel's column, forward only, stored as conj(.) / (nh nw) in Consts.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "fft_common.glsl"

layout(constant_id = 2) const int KERNEL = 0;

layout(std430, set = 0, binding = 0) buffer Work { uint work[]; };
layout(std430, set = 0, binding = 1) buffer Consts { float consts[]; };

vec2 twiddle_h(int m)
{
    int o = consts_twiddles(pc.nh) + 2 * m;
    return vec2(consts[o], consts[o + 1]);
}
DEFINE_FFT(fft_h, twiddle_h)

vec2 spectrum(int e)
{
    int o = consts_spectrum() + 2 * e;
    return vec2(consts[o], consts[o + 1]);
}

void kernel_column(int x)
{
    for (int i = int(gl_LocalInvocationID.x); i < pc.nh; i += WG)
        fft_buf[i] = i < pc.kh ? spectrum(i * pc.nw + x) : vec2(0.0);
    int res = fft_h(pc.nh);
    float norm = 1.0 / (float(pc.nh) * float(pc.nw));
    for (int i = int(gl_LocalInvocationID.x); i < pc.nh; i += WG) {
        int o = consts_spectrum() + 2 * (i * pc.nw + x);
        consts[o] = fft_buf[res + i].x * norm;
        consts[o + 1] = -fft_buf[res + i].y * norm;
    }
}

void tile_column(int x, Tile t)
{
    if (work[t.id] > floatBitsToUint(pc.limit)) return; // summed directly by fft_scatter
    if (work[t.id] == 0u) return; // an all-zero window: fft_scatter writes zeros
    int rows = t.th + pc.kh - 1;
    for (int i = int(gl_LocalInvocationID.x); i < pc.nh; i += WG) {
        int o = slot_word(t, i * pc.nw + x);
        fft_buf[i] =
            i < rows ? vec2(uintBitsToFloat(work[o]), uintBitsToFloat(work[o + 1])) : vec2(0.0);
    }
    int res = fft_h(pc.nh);
    // conj(X K*): the next transform forward is then the inverse (conjugated)
    for (int i = int(gl_LocalInvocationID.x); i < pc.nh; i += WG) {
        vec2 p = cmul(fft_buf[res + i], spectrum(i * pc.nw + x));
        fft_buf[i] = vec2(p.x, -p.y);
    }
    res = fft_h(pc.nh);
    for (int i = int(gl_LocalInvocationID.x); i < t.th; i += WG) {
        int o = slot_word(t, i * pc.nw + x);
        work[o] = floatBitsToUint(fft_buf[res + i].x);
        work[o + 1] = floatBitsToUint(fft_buf[res + i].y);
    }
}

void main()
{
    int x = int(gl_WorkGroupID.x);
    if (KERNEL != 0)
        kernel_column(x);
    else
        tile_column(x, tile_of(int(gl_WorkGroupID.y)));
}
