// Shared by every shader of the Vulkan module (#include "common.glsl"): the view addressing,
// the border rule and the dtype loads/stores. The facts are src/core/semantics.h's, restated in
// GLSL; vk_internal.h's vk_pview and the op files' _Static_asserts keep both sides in step.
//
// Buffers are arrays of 32-bit words whatever the dtype, so no 8/16-bit storage feature is
// needed: a u8 or u16 element is unpacked from its word, and stored with two atomics on its
// word (clear its bits, set them), so neighbours that belong to other invocations (or to no
// view at all, the gaps of a window) keep their bits.

// A view: element offset of its data pointer in the bound buffer, strides in elements.
struct View {
    int off, sn, sc, sh, sw;
};

// lumen_dtype values (include/lumen.h)
const int DT_U8 = 0;
const int DT_U16 = 1;
const int DT_F32 = 2;

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

// float NAME(int dt, int e): element e (of dtype dt) of word buffer ARR, as f32.
#define DEFINE_LOAD(NAME, ARR)                                                                    \
    float NAME(int dt, int e)                                                                     \
    {                                                                                             \
        if (dt == DT_F32) return uintBitsToFloat(ARR[e]);                                         \
        if (dt == DT_U16) return float((ARR[e >> 1] >> ((e & 1) * 16)) & 0xffffu);                \
        return float((ARR[e >> 2] >> ((e & 3) * 8)) & 0xffu);                                     \
    }

// void NAME(int dt, int e, float v): stores v as element e of dtype dt, saturated for u8/u16.
#define DEFINE_STORE(NAME, ARR)                                                                   \
    void NAME(int dt, int e, float v)                                                             \
    {                                                                                             \
        if (dt == DT_F32) {                                                                       \
            ARR[e] = floatBitsToUint(v);                                                          \
            return;                                                                               \
        }                                                                                         \
        int per = dt == DT_U16 ? 2 : 4, bits = 32 / per;                                          \
        uint shift = uint((e % per) * bits), mask = (dt == DT_U16 ? 0xffffu : 0xffu) << shift;    \
        uint q = sat_int(v, dt == DT_U16 ? 65535.0 : 255.0) << shift;                             \
        atomicAnd(ARR[e / per], ~mask);                                                           \
        atomicOr(ARR[e / per], q);                                                                \
    }
