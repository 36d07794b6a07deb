// The separable filter's column pass: dst = scale * (ky over the columns of the row pass's
// intermediate T), with the vertical border rule. Rows outside the image under the constant
// rule are rows of the border value, which the row pass would have turned into
// border_value * sum(kx): that is `outside`. Adjacent invocations read adjacent columns of T
// (coalesced); the rows a group shares come through the cache.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64, local_size_y = 4, local_size_z = 1) in;
layout(constant_id = 0) const int DST_DT = DT_F32;

layout(std430, set = 0, binding = 0) readonly buffer Tmp { float tmp[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Taps { float taps[]; }; // kx then ky

// Must match vk_cols_push in separable.c. h: rows of dst; hs: rows of T (the source's).
layout(push_constant) uniform Push {
    int c, h, hs, w;
    View d;
    int kw, kh, ay;
    int border;
    float outside;
    float scale;
} pc;

DEFINE_STORE(store_dst, dst)

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int z = int(gl_WorkGroupID.z);
    if (x >= pc.w || y >= pc.h) return;
    int plane = z * pc.hs * pc.w;
    float acc = 0.0;
    for (int i = 0; i < pc.kh; i++) {
        int sy = border_index(y + i - pc.ay, pc.hs, pc.border);
        acc += taps[pc.kw + i] * (sy < 0 ? pc.outside : tmp[plane + sy * pc.w + x]);
    }
    int b = z / pc.c, ch = z % pc.c;
    store_dst(DST_DT, view_index(pc.d, b, ch, y, x), acc * pc.scale);
}
