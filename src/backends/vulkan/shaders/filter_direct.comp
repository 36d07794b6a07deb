// The direct filter on f32 (LUMEN_OP_FILTER_DIRECT): one invocation per output pixel, x and y
// over the image, z over batch x channels, so a whole NCHW view runs in one dispatch. Views
// are whole storage buffers addressed by element offsets and signed strides from the push
// constants (padded windows, negative strides and batches with gaps need nothing special).
// The border rule is src/core/semantics.h's lumen_border_index, restated for GLSL.
#version 450

layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { float dst[]; };
layout(std430, set = 0, binding = 2) readonly buffer Taps { float taps[]; };

// Must match vk_push in direct.c (a _Static_assert there checks its size).
layout(push_constant) uniform Push {
    int n, c, h, w;
    int src_off, src_sn, src_sc, src_sh, src_sw;
    int dst_off, dst_sn, dst_sc, dst_sh, dst_sw;
    int kw, kh, ax, ay;
    int border;
    float border_value;
} pc;

// lumen_border values (include/lumen.h; direct.c asserts them).
const int BORDER_REFLECT = 0;
const int BORDER_CONSTANT = 1;
const int BORDER_REPLICATE = 2;
const int BORDER_REFLECT101 = 3;
const int BORDER_WRAP = 4;

int mod_pos(int a, int m)
{
    int r = a % m;
    return r < 0 ? r + m : r;
}

// i mapped into [0, n) by the border mode; -1 means "the constant value". Exact for any
// offset, so kernels larger than the image need no special case.
int border_index(int i, int n)
{
    if (i >= 0 && i < n) return i;
    if (pc.border == BORDER_CONSTANT) return -1;
    if (pc.border == BORDER_REPLICATE) return i < 0 ? 0 : n - 1;
    if (pc.border == BORDER_REFLECT) {
        int p = mod_pos(i, 2 * n);
        return p < n ? p : 2 * n - 1 - p;
    }
    if (pc.border == BORDER_REFLECT101) {
        if (n == 1) return 0;
        int p = mod_pos(i, 2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    }
    return mod_pos(i, n); // wrap
}

void main()
{
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int z = int(gl_GlobalInvocationID.z);
    if (x >= pc.w || y >= pc.h || z >= pc.n * pc.c) return;
    int b = z / pc.c, ch = z % pc.c;
    int base = pc.src_off + b * pc.src_sn + ch * pc.src_sc;
    float acc = 0.0;
    for (int i = 0; i < pc.kh; i++) {
        int sy = border_index(y + i - pc.ay, pc.h);
        for (int t = 0; t < pc.kw; t++) {
            int sx = border_index(x + t - pc.ax, pc.w);
            float v = sy < 0 || sx < 0 ? pc.border_value : src[base + sy * pc.src_sh + sx * pc.src_sw];
            acc += taps[i * pc.kw + t] * v;
        }
    }
    dst[pc.dst_off + b * pc.dst_sn + ch * pc.dst_sc + y * pc.dst_sh + x * pc.dst_sw] = acc;
}
