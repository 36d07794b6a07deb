// The FFT filter's last pass (fft.c, docs/vulkan-fft.md): one workgroup transforms one output
// row of a tile back along x (fft_cols left it conjugated: the forward transform of the
// conjugate is the conjugate of the inverse, whose real part is the output) and stores its
// outputs to dst with the dtype's rounding and saturation. x: the output row, y: the tile
// within the group.
// Tiles whose window holds NaN/Inf, or values so large that the transform's sums could
// overflow, are summed directly instead (flag above pc.limit): NaN stays where the direct
// filter puts it. With pc.ties (integer dst, dyadic kernel) outputs within the transform's
// error of a .5 tie are summed directly too, so they round as the exact value does.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "fft_common.glsl"

layout(constant_id = 2) const int SRC_DT = DT_F32;
layout(constant_id = 3) const int DST_DT = DT_F32;

layout(std430, set = 0, binding = 0) readonly buffer Work { uint work[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 3) readonly buffer Consts { float consts[]; };

DEFINE_LOAD(load_src, src)
DEFINE_STORE(store_dst, dst)

vec2 twiddle_w(int m)
{
    return vec2(consts[2 * m], consts[2 * m + 1]);
}
DEFINE_FFT(fft_w, twiddle_w)

// Output (y, x) of the tile (tile coordinates) as the direct filter sums it.
float direct_at(Tile t, int y, int x)
{
    int base = pc.s.off + t.b * pc.s.sn + t.ch * pc.s.sc;
    int taps = consts_taps();
    float acc = 0.0;
    for (int i = 0; i < pc.kh; i++) {
        int sy = border_index(t.y0 + y + i - pc.ay, pc.h, pc.border);
        for (int j = 0; j < pc.kw; j++) {
            int sx = border_index(t.x0 + x + j - pc.ax, pc.w, pc.border);
            float v = sy < 0 || sx < 0 ? pc.border_value
                                       : load_src(SRC_DT, base + sy * pc.s.sh + sx * pc.s.sw);
            acc += consts[taps + i * pc.kw + j] * v;
        }
    }
    return acc;
}

void main()
{
    int y = int(gl_WorkGroupID.x);
    Tile t = tile_of(int(gl_WorkGroupID.y));
    if (y >= t.th) return;
    uint flag = work[t.id];
    int out_ = pc.d.off + t.b * pc.d.sn + t.ch * pc.d.sc + (t.y0 + y) * pc.d.sh;
    if (flag == 0u) { // an all-zero window (film highlights): its outputs are exactly zero
        for (int x = int(gl_LocalInvocationID.x); x < t.tw; x += WG)
            store_dst(DST_DT, out_ + (t.x0 + x) * pc.d.sw, 0.0);
        return;
    }
    if (flag > floatBitsToUint(pc.limit)) {
        for (int x = int(gl_LocalInvocationID.x); x < t.tw; x += WG)
            store_dst(DST_DT, out_ + (t.x0 + x) * pc.d.sw, direct_at(t, y, x));
        return;
    }
    for (int x = int(gl_LocalInvocationID.x); x < pc.nw; x += WG) {
        int o = slot_word(t, y * pc.nw + x);
        fft_buf[x] = vec2(uintBitsToFloat(work[o]), uintBitsToFloat(work[o + 1]));
    }
    int res = fft_w(pc.nw);
    // fix_ties in src/backends/cpu/fft_filter.c: 10x the transform's measured error
    float eps = 1e-6 * pc.sum_k * uintBitsToFloat(flag);
    for (int x = int(gl_LocalInvocationID.x); x < t.tw; x += WG) {
        float v = fft_buf[res + x].x;
        if (pc.ties != 0 && abs(v - floor(v) - 0.5) <= eps) v = direct_at(t, y, x);
        store_dst(DST_DT, out_ + (t.x0 + x) * pc.d.sw, v);
    }
}
