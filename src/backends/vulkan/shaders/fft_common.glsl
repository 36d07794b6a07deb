// Shared by the FFT filter's shaders (fft_rows, fft_cols, fft_scatter; src/backends/vulkan/fft.c
// and docs/vulkan-fft.md): the push constants, the tile geometry, the buffers' layouts and the
// shared-memory Stockham transform that one workgroup runs on one row or column of a tile.
//
// Buffers, as fft.c fills them:
//   Work   (uint words): flags[tiles], one per tile of the op (the largest |x| of the tile's
//          window as float bits; Inf for NaN/Inf), then the tile slots of the current group:
//          nh x nw complex (re, im) per tile, row-major.
//   Consts (floats): the twiddles exp(-2 pi i m / nw) (nw complex), those of nh (nh complex),
//          the kernel's taps (kh x kw), then its spectrum conj(FFT(k)) / (nh nw) (nh x nw
//          complex, from an even offset).

layout(constant_id = 0) const int MAXN = 1024; // shared capacity: transforms up to MAXN points
layout(constant_id = 1) const int WG = 256;    // local_size_x
layout(local_size_x_id = 1, local_size_y = 1, local_size_z = 1) in;

// Must match fft_push in fft.c.
layout(push_constant) uniform Push {
    View s, d;
    int c, h, w, border;
    float border_value;
    int kw, kh, ax, ay;
    int nh, nw, th, tw; // transform sizes; outputs per tile (full tiles)
    int tiles_x, tiles_y, tile0; // tiles per plane across and down; the group's first tile
    int data_off;                // words of Work before the group's tile slots
    float limit;                 // largest window |x| the transform may take (overflow guard)
    float sum_k;                 // sum |k|
    int ties;                    // integer dst and a dyadic kernel: sum outputs near .5 directly
} pc;

// One tile of the op: its plane, its first output and its outputs (fewer at the right and
// bottom edges).
struct Tile {
    int id, slot, b, ch, y0, x0, th, tw;
};

Tile tile_of(int slot)
{
    Tile t;
    t.slot = slot;
    t.id = pc.tile0 + slot;
    int per_plane = pc.tiles_x * pc.tiles_y, plane = t.id / per_plane, i = t.id % per_plane;
    t.b = plane / pc.c;
    t.ch = plane % pc.c;
    t.y0 = (i / pc.tiles_x) * pc.th;
    t.x0 = (i % pc.tiles_x) * pc.tw;
    t.th = min(pc.th, pc.h - t.y0);
    t.tw = min(pc.tw, pc.w - t.x0);
    return t;
}

// Word of Work where complex element e of the tile slot starts.
int slot_word(Tile t, int e)
{
    return pc.data_off + 2 * (t.slot * pc.nh * pc.nw + e);
}

int consts_twiddles(int n)
{
    return n == pc.nw ? 0 : 2 * pc.nw;
}
int consts_taps()
{
    return 2 * (pc.nw + pc.nh);
}
int consts_spectrum()
{
    int e = consts_taps() + pc.kw * pc.kh;
    return e + (e & 1);
}

// |x| as float bits, Inf (0x7f800000) for NaN and Inf: atomicMax over them is the window's
// largest magnitude, and NaN/Inf compare above every finite value.
uint magnitude_bits(float v)
{
    return min(floatBitsToUint(v) & 0x7fffffffu, 0x7f800000u);
}

// ---- the transform ---------------------------------------------------------------------------

// Two halves: a Stockham pass reads one and writes the other, so no element is overwritten
// before every invocation has read it, and the output comes out in natural order.
shared vec2 fft_buf[2 * MAXN];

vec2 cmul(vec2 a, vec2 b)
{
    return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
// -i * a
vec2 mul_mi(vec2 a)
{
    return vec2(a.y, -a.x);
}

// The Stockham passes of the forward transform (sign -1) of fft_buf[0 .. n), twiddles from
// TWIDDLE(m) = exp(-2 pi i m / n). Radix 4 while 4 divides what is left, then 2, 3, 5 (n has
// no other prime factor). Returns the half (0 or MAXN) that holds the result. Every
// invocation of the workgroup must call it (barriers).
#define DEFINE_FFT(NAME, TWIDDLE)                                                                  \
    vec2 NAME##_in(int src, int j, int q, int m, int k, int step)                                  \
    {                                                                                              \
        vec2 a = fft_buf[src + j + q * m];                                                         \
        return q == 0 ? a : cmul(a, TWIDDLE(k * q * step));                                        \
    }                                                                                              \
    int NAME(int n)                                                                                \
    {                                                                                              \
        int src = 0, dst = MAXN, ns = 1;                                                           \
        memoryBarrierShared();                                                                     \
        barrier();                                                                                 \
        while (ns < n) {                                                                           \
            int rest = n / ns;                                                                     \
            int r = rest % 4 == 0 ? 4 : rest % 2 == 0 ? 2 : rest % 3 == 0 ? 3 : 5;                 \
            int m = n / r, step = rest / r;                                                        \
            for (int j = int(gl_LocalInvocationID.x); j < m; j += WG) {                            \
                int k = j % ns, o = dst + (j / ns) * ns * r + k;                                   \
                vec2 a0 = NAME##_in(src, j, 0, m, k, step);                                        \
                vec2 a1 = NAME##_in(src, j, 1, m, k, step);                                        \
                if (r == 2) {                                                                      \
                    fft_buf[o] = a0 + a1;                                                          \
                    fft_buf[o + ns] = a0 - a1;                                                     \
                    continue;                                                                      \
                }                                                                                  \
                vec2 a2 = NAME##_in(src, j, 2, m, k, step);                                        \
                if (r == 3) {                                                                      \
                    const float s3 = 0.86602540378443865;                                          \
                    vec2 t = a1 + a2, u = a0 - 0.5 * t, v = s3 * mul_mi(a1 - a2);                  \
                    fft_buf[o] = a0 + t;                                                           \
                    fft_buf[o + ns] = u + v;                                                       \
                    fft_buf[o + 2 * ns] = u - v;                                                   \
                    continue;                                                                      \
                }                                                                                  \
                vec2 a3 = NAME##_in(src, j, 3, m, k, step);                                        \
                if (r == 4) {                                                                      \
                    vec2 t0 = a0 + a2, t1 = a0 - a2, t2 = a1 + a3, t3 = mul_mi(a1 - a3);           \
                    fft_buf[o] = t0 + t2;                                                          \
                    fft_buf[o + ns] = t1 + t3;                                                     \
                    fft_buf[o + 2 * ns] = t0 - t2;                                                 \
                    fft_buf[o + 3 * ns] = t1 - t3;                                                 \
                    continue;                                                                      \
                }                                                                                  \
                vec2 a4 = NAME##_in(src, j, 4, m, k, step);                                        \
                const float c1 = 0.30901699437494742, c2 = -0.80901699437494742;                   \
                const float s1 = 0.95105651629515357, s2 = 0.58778525229247313;                    \
                vec2 t1 = a1 + a4, d1 = a1 - a4, t2 = a2 + a3, d2 = a2 - a3;                       \
                vec2 u1 = a0 + c1 * t1 + c2 * t2, u2 = a0 + c2 * t1 + c1 * t2;                     \
                vec2 v1 = mul_mi(s1 * d1 + s2 * d2), v2 = mul_mi(s2 * d1 - s1 * d2);               \
                fft_buf[o] = a0 + t1 + t2;                                                         \
                fft_buf[o + ns] = u1 + v1;                                                         \
                fft_buf[o + 2 * ns] = u2 + v2;                                                     \
                fft_buf[o + 3 * ns] = u2 - v2;                                                     \
                fft_buf[o + 4 * ns] = u1 - v1;                                                     \
            }                                                                                      \
            memoryBarrierShared();                                                                 \
            barrier();                                                                             \
            int t = src;                                                                           \
            src = dst;                                                                             \
            dst = t;                                                                               \
            ns *= r;                                                                               \
        }                                                                                          \
        return src;                                                                                \
    }
