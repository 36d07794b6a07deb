// The direct filter (LUMEN_OP_FILTER_DIRECT) on u8/u16/f32 in and out: one invocation per
// output pixel, x and y over the image, z over batch x channels, so a whole NCHW (or NHWC:
// strides) view runs in one dispatch. A workgroup first loads its 16x16 tile plus the
// kernel's reach (border rule applied once per loaded pixel) into shared memory, then every
// invocation sums its window from there; kernels wider or taller than MAX_TILE_K read the
// source directly (the FFT takes over long before that pays).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;
layout(constant_id = 0) const int SRC_DT = DT_F32;
layout(constant_id = 1) const int DST_DT = DT_F32;
layout(constant_id = 2) const int TILED = 1;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Taps { float taps[]; };

// Must match vk_direct_push in direct.c.
// h: rows of dst; hs: rows of src (a piece of a large image has its kernel's reach more).
layout(push_constant) uniform Push {
    int c, h, hs, w;
    View s, d;
    int kw, kh, ax, ay;
    int border;
    float border_value;
} pc;

DEFINE_LOAD(load_src, src)
DEFINE_STORE(store_dst, dst)

const int MAX_TILE_K = 33;
const int TILE = 16 + MAX_TILE_K - 1;
shared float tile[TILE * TILE];

float src_at(int base, int y, int x)
{
    int sy = border_index(y, pc.hs, pc.border), sx = border_index(x, pc.w, pc.border);
    if (sy < 0 || sx < 0) return pc.border_value;
    return load_src(SRC_DT, base + sy * pc.s.sh + sx * pc.s.sw);
}

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int z = int(gl_WorkGroupID.z);
    int b = z / pc.c, ch = z % pc.c;
    int base = pc.s.off + b * pc.s.sn + ch * pc.s.sc;
    float acc = 0.0;
    if (TILED != 0) {
        // the tile's top-left source pixel, and its size for this kernel
        int x0 = int(gl_WorkGroupID.x) * 16 - pc.ax, y0 = int(gl_WorkGroupID.y) * 16 - pc.ay;
        int tw = 16 + pc.kw - 1, th = 16 + pc.kh - 1;
        for (int i = int(gl_LocalInvocationIndex); i < tw * th; i += 256)
            tile[i] = src_at(base, y0 + i / tw, x0 + i % tw);
        barrier();
        if (x >= pc.w || y >= pc.h) return;
        int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
        for (int i = 0; i < pc.kh; i++)
            for (int t = 0; t < pc.kw; t++)
                acc += taps[i * pc.kw + t] * tile[(ly + i) * tw + lx + t];
    } else {
        if (x >= pc.w || y >= pc.h) return;
        for (int i = 0; i < pc.kh; i++)
            for (int t = 0; t < pc.kw; t++)
                acc += taps[i * pc.kw + t] * src_at(base, y + i - pc.ay, x + t - pc.ax);
    }
    store_dst(DST_DT, view_index(pc.d, b, ch, y, x), acc);
}
