// Resize (LUMEN_OP_RESIZE) on u8/u16/f32 in and out: one invocation per output pixel, x and y
// over the output, z over batch x channels. The op's two axis tables (docs/resize.md) come in
// one buffer: for output pixel x the window starts at tab[x] (an int's bits) with kx weights at
// tab[wx + x kx]; rows likewise from fy and wy. Every window lies inside the image (the tables
// fold the edge rules in), so there is no border code. Sums run horizontal then vertical, as
// the CPU's; Pillow's 8-bit rule runs in its integers (22-bit weights, bytes between).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;
layout(constant_id = 0) const int SRC_DT = DT_F32;
layout(constant_id = 1) const int DST_DT = DT_F32;
layout(constant_id = 2) const int NEAREST = 0;
layout(constant_id = 3) const int PILLOW_U8 = 0;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Tab { uint tab[]; };

// Must match vk_resize_push in resize.c. h, w: the output's size; wx, fy, wy: offsets (in
// words) of the x weights, the y starts and the y weights in tab (the x starts are at 0).
layout(push_constant) uniform Push {
    int c, h, w, kx, ky, wx, fy, wy;
    View s, d;
} pc;

DEFINE_LOAD(load_src, src)
DEFINE_STORE(store_dst, dst)

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    if (x >= pc.w || y >= pc.h) return;
    int z = int(gl_WorkGroupID.z);
    int b = z / pc.c, ch = z % pc.c;
    int base = pc.s.off + b * pc.s.sn + ch * pc.s.sc;
    int x0 = int(tab[x]), y0 = int(tab[pc.fy + y]);
    int o = view_index(pc.d, b, ch, y, x);
    if (NEAREST != 0) { // a copy: f32 to f32 bit for bit
        int e = base + y0 * pc.s.sh + x0 * pc.s.sw;
        if (SRC_DT == DT_F32 && DST_DT == DT_F32)
            dst[o] = src[e];
        else
            store_dst(DST_DT, o, load_src(SRC_DT, e));
        return;
    }
    if (PILLOW_U8 != 0) { // Pillow's integers: 22-bit weights (tab holds them), bytes between
        int acc = 1 << 21;
        for (int i = 0; i < pc.ky; i++) {
            int row = base + (y0 + i) * pc.s.sh + x0 * pc.s.sw;
            int r = 1 << 21;
            for (int t = 0; t < pc.kx; t++)
                r += int(tab[pc.wx + x * pc.kx + t]) * int(load_src(SRC_DT, row + t * pc.s.sw));
            acc += int(tab[pc.wy + y * pc.ky + i]) * clamp(r >> 22, 0, 255);
        }
        store_dst(DST_DT, o, float(clamp(acc >> 22, 0, 255)));
        return;
    }
    float acc = 0.0;
    for (int i = 0; i < pc.ky; i++) {
        int row = base + (y0 + i) * pc.s.sh + x0 * pc.s.sw;
        float r = 0.0;
        for (int t = 0; t < pc.kx; t++)
            r += uintBitsToFloat(tab[pc.wx + x * pc.kx + t]) * load_src(SRC_DT, row + t * pc.s.sw);
        acc += uintBitsToFloat(tab[pc.wy + y * pc.ky + i]) * r;
    }
    store_dst(DST_DT, o, acc);
}
