// The fast Gaussian's exact axis (sigma < 2; gauss_fast.c): OpenCV's kernel (at most 19 taps)
// as a symmetric FIR along x (AXIS 0) or y (AXIS 1) with the border rule, one invocation per
// output pixel, z over batch x channels. Taps are summed in order, as the CPU's fir_generic.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;
layout(constant_id = 0) const int AXIS = 0;
layout(constant_id = 1) const int IN_DT = DT_F32;
layout(constant_id = 2) const int OUT_DT = DT_F32;

layout(std430, set = 0, binding = 0) readonly buffer In { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 3) readonly buffer Coef { float coef[]; };

// Must match vk_gf_fir_push in gauss_fast.c.
layout(push_constant) uniform Push {
    int c, h, w;
    View s, d;
    int border;
    float border_value;
    int taps;
    int coef; // first tap in Coef
} pc;

DEFINE_LOAD(load_src, src)
DEFINE_STORE(store_dst, dst)

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int z = int(gl_WorkGroupID.z);
    if (x >= pc.w || y >= pc.h) return;
    int b = z / pc.c, ch = z % pc.c;
    int n = AXIS == 0 ? pc.w : pc.h, i = AXIS == 0 ? x : y;
    int base = view_index(pc.s, b, ch, AXIS == 0 ? y : 0, AXIS == 0 ? 0 : x);
    int step = AXIS == 0 ? pc.s.sw : pc.s.sh;
    int r = pc.taps / 2;
    float acc = 0.0;
    for (int t = 0; t < pc.taps; t++) {
        int j = border_index(i + t - r, n, pc.border);
        float v = j < 0 ? pc.border_value : load_src(IN_DT, base + j * step);
        acc += coef[pc.coef + t] * v;
    }
    store_dst(OUT_DT, view_index(pc.d, b, ch, y, x), acc);
}
