// The separable filter's row pass (LUMEN_OP_FILTER_SEPARABLE, box blur, exact Gaussian): every
// row of every plane filtered by kx with the horizontal border rule, into an f32 intermediate
// T (planes of h x w, contiguous). A workgroup filters 64 pixels of 4 rows from a shared copy
// of its span (border rule applied once per loaded pixel); kernels wider than MAX_TILE_K read
// the source directly. shaders/filter_cols.comp then runs the columns of T.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64, local_size_y = 4, local_size_z = 1) in;
layout(constant_id = 0) const int SRC_DT = DT_F32;
layout(constant_id = 1) const int TILED = 1;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Tmp { float tmp[]; };
layout(std430, set = 0, binding = 2) readonly buffer Taps { float taps[]; }; // kx then ky

// Must match vk_rows_push in separable.c.
layout(push_constant) uniform Push {
    int c, h, w;
    View s;
    int kw, ax;
    int border;
    float border_value;
} pc;

DEFINE_LOAD(load_src, src)

const int MAX_TILE_K = 257;
const int SPAN = 64 + MAX_TILE_K - 1;
shared float span[4 * SPAN];

float src_at(int base, int x)
{
    int sx = border_index(x, pc.w, pc.border);
    return sx < 0 ? pc.border_value : load_src(SRC_DT, base + sx * pc.s.sw);
}

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int z = int(gl_WorkGroupID.z);
    int b = z / pc.c, ch = z % pc.c;
    bool row_in = y < pc.h;
    int base = pc.s.off + b * pc.s.sn + ch * pc.s.sc + y * pc.s.sh;
    float acc = 0.0;
    if (TILED != 0) {
        int ly = int(gl_LocalInvocationID.y), lx = int(gl_LocalInvocationID.x);
        int x0 = int(gl_WorkGroupID.x) * 64 - pc.ax, n = 64 + pc.kw - 1;
        if (row_in)
            for (int i = lx; i < n; i += 64)
                span[ly * SPAN + i] = src_at(base, x0 + i);
        barrier();
        if (!row_in || x >= pc.w) return;
        for (int t = 0; t < pc.kw; t++)
            acc += taps[t] * span[ly * SPAN + lx + t];
    } else {
        if (!row_in || x >= pc.w) return;
        for (int t = 0; t < pc.kw; t++)
            acc += taps[t] * src_at(base, x + t - pc.ax);
    }
    tmp[(z * pc.h + y) * pc.w + x] = acc;
}
