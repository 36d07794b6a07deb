// The fast Gaussian along one axis (gauss_fast.c, docs/gaussian-fast.md), one invocation per
// line (AXIS 0: a row, x runs along it; AXIS 1: a column, so adjacent invocations touch adjacent
// pixels), z over batch x channels. The line is extended by `pad` samples of the border rule on
// each side (no copies: each padded sample reads the sample the rule names).
//
// FIR (sigma < 2): OpenCV's exact kernel, pad = taps / 2.
// Otherwise Deriche's 4th-order filter as two complex one-pole sections in f32. The recursion
// starts from a state that is exact for the extension beyond the pad: the steady state of the
// outermost sample, or (periodic) zero and then q = 1 / (1 - p^period) after one period of pad.
// The anticausal pass runs first and leaves its part in AUX (the output itself when that is f32,
// else a scratch plane); the causal pass adds it and stores. All as the CPU's iir_generic and
// fir_generic (src/backends/cpu/gaussian_fast.c), with the coefficients it designs
// (core/gaussian_fast_coeffs.h), so lavapipe matches the CPU's portable kernels bit for bit.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const int AXIS = 0;
layout(constant_id = 1) const int IN_DT = DT_F32;
layout(constant_id = 2) const int OUT_DT = DT_F32;
layout(constant_id = 3) const int AUX_IN_OUT = 1; // the anticausal part is kept in Out (f32)
layout(constant_id = 4) const int FIR = 0;        // the exact kernel (pc.pad = taps / 2) instead

layout(std430, set = 0, binding = 0) readonly buffer In { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 2) buffer Aux { float aux[]; };
layout(std430, set = 0, binding = 3) readonly buffer Coef { float coef[]; };

// Must match vk_gf_push in gauss_fast.c.
layout(push_constant) uniform Push {
    int c, h, w;
    View s, d, a;
    int border;
    float border_value;
    int pad;
    int periodic;
    int coef; // first of the axis's coefficients: 24 (iir_coefs in gauss_fast.c) or the taps
} pc;

DEFINE_LOAD(load_src, src)
DEFINE_STORE(store_dst, dst)

// Coefficient pair k (0: pole p, 1: a, 2: p a, 3: g, 4: h, 5: q) of section j as a complex.
vec2 cf(int k, int j)
{
    return vec2(coef[pc.coef + 4 * k + j], coef[pc.coef + 4 * k + 2 + j]);
}

vec2 cmul(vec2 u, vec2 v)
{
    return vec2(u.x * v.x - u.y * v.y, u.x * v.y + u.y * v.x);
}

int n_samples;
int in_base, in_step;

// Padded sample i (0 <= i < n + 2 pad) of the line.
float x_at(int i)
{
    int j = border_index(i - pc.pad, n_samples, pc.border);
    return j < 0 ? pc.border_value : load_src(IN_DT, in_base + j * in_step);
}

// Section j's state after one step: p s + v x (as the CPU's iir_step, in f32).
vec2 step_state(vec2 p, vec2 s, vec2 v, float x)
{
    return vec2(p.x * s.x - p.y * s.y + v.x * x, p.x * s.y + p.y * s.x + v.y * x);
}

void aux_store(int e, float v)
{
    if (AUX_IN_OUT != 0)
        dst[e] = floatBitsToUint(v);
    else
        aux[e] = v;
}

float aux_load(int e)
{
    return AUX_IN_OUT != 0 ? uintBitsToFloat(dst[e]) : aux[e];
}

void main()
{
    int line = int(gl_GlobalInvocationID.x);
    int z = int(gl_WorkGroupID.z);
    int b = z / pc.c, ch = z % pc.c;
    int lines = AXIS == 0 ? pc.h : pc.w;
    if (line >= lines) return;
    n_samples = AXIS == 0 ? pc.w : pc.h;
    int ly = AXIS == 0 ? line : 0, lx = AXIS == 0 ? 0 : line;
    in_base = view_index(pc.s, b, ch, ly, lx);
    in_step = AXIS == 0 ? pc.s.sw : pc.s.sh;
    int out_base = view_index(pc.d, b, ch, ly, lx), out_step = AXIS == 0 ? pc.d.sw : pc.d.sh;
    // (a View from the push block is not copied whole: glslc's optimiser rejects that)
    int aux_base = AUX_IN_OUT != 0 ? out_base : view_index(pc.a, b, ch, ly, lx);
    int aux_step = AUX_IN_OUT != 0 ? out_step : AXIS == 0 ? pc.a.sw : pc.a.sh;

    const int n = n_samples, pad = pc.pad, len = n + 2 * pad;
    if (FIR != 0) {
        // OpenCV's taps in order, as the CPU's fir_generic: out[k] = sum_t tap[t] x[k + t];
        // the outputs whose taps all lie inside the line skip the border rule
        int lo = min(pad, n), hi = max(n - pad, lo);
        for (int k = 0; k < n; k++) {
            float acc = 0.0;
            if (k >= lo && k < hi) {
                int e = in_base + (k - pad) * in_step;
                for (int t = 0; t <= 2 * pad; t++, e += in_step)
                    acc += coef[pc.coef + t] * load_src(IN_DT, e);
            } else {
                for (int t = 0; t <= 2 * pad; t++)
                    acc += coef[pc.coef + t] * x_at(k + t);
            }
            store_dst(OUT_DT, out_base + k * out_step, acc);
        }
        return;
    }
    const bool periodic = pc.periodic != 0;
    vec2 p0 = cf(0, 0), p1 = cf(0, 1);

    // Anticausal: w[i] = p w[i+1] + p a x[i+1], started at the right end.
    vec2 b0 = cf(2, 0), b1 = cf(2, 1);
    float x0 = periodic ? 0.0 : x_at(len - 1);
    vec2 s0 = cf(4, 0) * x0, s1 = cf(4, 1) * x0;
    for (int i = len - 2; i >= pad + n - 1; i--) {
        float x = x_at(i + 1);
        s0 = step_state(p0, s0, b0, x), s1 = step_state(p1, s1, b1, x);
    }
    if (periodic) s0 = cmul(cf(5, 0), s0), s1 = cmul(cf(5, 1), s1);
    aux_store(aux_base + (n - 1) * aux_step, s0.x + s1.x);
    for (int i = pad + n - 2; i >= pad; i--) {
        float x = x_at(i + 1);
        s0 = step_state(p0, s0, b0, x), s1 = step_state(p1, s1, b1, x);
        aux_store(aux_base + (i - pad) * aux_step, s0.x + s1.x);
    }

    // Causal: z[i] = p z[i-1] + a x[i], started at the left end; adds the anticausal part.
    vec2 a0 = cf(1, 0), a1 = cf(1, 1);
    x0 = periodic ? 0.0 : x_at(0);
    s0 = cf(3, 0) * x0, s1 = cf(3, 1) * x0;
    for (int i = 0; i < pad; i++) {
        float x = x_at(i);
        s0 = step_state(p0, s0, a0, x), s1 = step_state(p1, s1, a1, x);
    }
    if (periodic) s0 = cmul(cf(5, 0), s0), s1 = cmul(cf(5, 1), s1);
    for (int i = pad; i < pad + n; i++) {
        float x = x_at(i);
        s0 = step_state(p0, s0, a0, x), s1 = step_state(p1, s1, a1, x);
        int k = i - pad;
        store_dst(OUT_DT, out_base + k * out_step, s0.x + s1.x + aux_load(aux_base + k * aux_step));
    }
}
