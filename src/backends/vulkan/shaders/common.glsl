// Shared by every shader of the Vulkan module (#include "common.glsl"): the view addressing,
// the border rule and the dtype loads/stores. The facts are src/core/semantics.h's, restated in
// GLSL; vk_internal.h's vk_pview and the op files' _Static_asserts keep both sides in step.
//
// Buffers are arrays of 32-bit words whatever the dtype, so no 8/16-bit storage feature is
// needed: a u8, u16, f16 or bf16 element is unpacked from its word, and stored with two atomics
// on its word (clear its bits, set them), so neighbours that belong to other invocations (or to
// no view at all, the gaps of a window) keep their bits. f16 and bf16 are converted with integer
// operations (semantics.h's lumen_f16_to_f32 ... restated), not unpackHalf2x16/packHalf2x16,
// whose rounding and subnormals GLSL leaves to the implementation: stores round to nearest
// even, NaN stays NaN, f16 overflows to infinity, bit for bit as the CPU.

// A view: element offset of its data pointer in the bound buffer, strides in elements.
struct View {
    int off, sn, sc, sh, sw;
};

// lumen_dtype values (include/lumen.h)
const int DT_U8 = 0;
const int DT_U16 = 1;
const int DT_F32 = 2;
const int DT_F16 = 3;
const int DT_BF16 = 4;

// lumen_border values (include/lumen.h; vk_internal.h asserts them)
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

// i mapped into [0, n) by the border mode; -1 means "the constant value" (lumen_border_index).
int border_index(int i, int n, int border)
{
    if (i >= 0 && i < n) return i;
    if (border == BORDER_CONSTANT) return -1;
    if (border == BORDER_REPLICATE) return i < 0 ? 0 : n - 1;
    if (border == BORDER_REFLECT) {
        int p = mod_pos(i, 2 * n);
        return p < n ? p : 2 * n - 1 - p;
    }
    if (border == BORDER_REFLECT101) {
        if (n == 1) return 0;
        int p = mod_pos(i, 2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    }
    return mod_pos(i, n); // wrap
}

int view_index(View v, int b, int c, int y, int x)
{
    return v.off + b * v.sn + c * v.sc + y * v.sh + x * v.sw;
}

// lumen_sat_u8/u16: round half to even, saturate, NaN to 0.
uint sat_int(float v, float top)
{
    if (isnan(v) || !(v > 0.0)) return 0u;
    if (v >= top) return uint(top);
    return uint(roundEven(v));
}

// lumen_shift_rne: m >> s rounded to nearest even (1 <= s < 32).
uint shift_rne(uint m, uint s)
{
    uint q = m >> s, rem = m & ((1u << s) - 1u), half_ = 1u << (s - 1u);
    return q + ((rem > half_ || (rem == half_ && (q & 1u) != 0u)) ? 1u : 0u);
}

// lumen_f16_to_f32: exact; NaN quieted.
float f16_to_f32(uint h)
{
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (m != 0u ? 0x400000u | (m << 13) : 0u));
    if (e == 0u) {
        if (m == 0u) return uintBitsToFloat(sign);
        e = 113u; // subnormal: normalise (m * 2^-24 is a normal f32)
        while ((m & 0x400u) == 0u) {
            m <<= 1;
            e--;
        }
        return uintBitsToFloat(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

// lumen_f32_to_f16: nearest even, on the bits.
uint f32_to_f16(float f)
{
    uint u = floatBitsToUint(f), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
    if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a >= 0x38800000u) return sign | shift_rne(a - (112u << 23), 13u);
    if (a < 0x33000000u) return sign;
    uint e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    return sign | shift_rne(m, 126u - e);
}

// lumen_f32_to_bf16: nearest even; NaN quieted (never carried into infinity).
uint f32_to_bf16(float f)
{
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

// float NAME(int dt, int e): element e (of dtype dt) of word buffer ARR, as f32.
#define DEFINE_LOAD(NAME, ARR)                                                                    \
    float NAME(int dt, int e)                                                                     \
    {                                                                                             \
        if (dt == DT_F32) return uintBitsToFloat(ARR[e]);                                         \
        if (dt == DT_U8) return float((ARR[e >> 2] >> ((e & 3) * 8)) & 0xffu);                    \
        uint h = (ARR[e >> 1] >> ((e & 1) * 16)) & 0xffffu;                                       \
        if (dt == DT_F16) return f16_to_f32(h);                                                   \
        if (dt == DT_BF16) return uintBitsToFloat(h << 16);                                       \
        return float(h);                                                                          \
    }

// void NAME(int dt, int e, float v): stores v as element e of dtype dt, saturated for u8/u16,
// rounded to nearest even for f16/bf16.
#define DEFINE_STORE(NAME, ARR)                                                                   \
    void NAME(int dt, int e, float v)                                                             \
    {                                                                                             \
        if (dt == DT_F32) {                                                                       \
            ARR[e] = floatBitsToUint(v);                                                          \
            return;                                                                               \
        }                                                                                         \
        int per = dt == DT_U8 ? 4 : 2, bits = 32 / per;                                           \
        uint shift = uint((e % per) * bits), mask = (dt == DT_U8 ? 0xffu : 0xffffu) << shift;     \
        uint q = dt == DT_F16    ? f32_to_f16(v)                                                  \
                 : dt == DT_BF16 ? f32_to_bf16(v)                                                 \
                                 : sat_int(v, dt == DT_U16 ? 65535.0 : 255.0);                    \
        atomicAnd(ARR[e / per], ~mask);                                                           \
        atomicOr(ARR[e / per], q << shift);                                                       \
    }
