// conv2d and conv_transpose2d (NCHW f32, f16 or bf16 storage, f32 sums, any strides) as one implicit GEMM (conv.c, docs/
// vulkan-conv.md). Per group g the output is a matrix M x Kg: rows are output pixels (the
// batch folded in), columns the group's output channels, and the reduction runs over the
// group's input channels and kernel taps. A workgroup computes a BM x BN tile of it (WM x WN
// invocations, each TM x TN outputs), staging BK-deep slices of the x patches (im2col on the
// fly, zero outside the image) and of w in shared memory.
//
// conv_transpose2d is the same GEMM, gathered per output (no atomics, deterministic), one
// output phase (oh mod stride_h, ow mod stride_w) at a time: in a phase the taps that reach an
// output are a fixed arithmetic progression of (r, s) and the input they read is (oh', ow')
// plus a constant per tap, so only contributing taps enter the reduction, and a phase's GEMM
// looks like a stride-1 conv. z runs over groups x phases (one phase for conv2d).
//
// Accuracy: a BK-term block is summed with fma into a partial sum, and each block's partial
// is added to a compensated (hi, lo) pair with TwoSum, so the error is that of BK-term f32
// sums (<= BK units of 2^-24 of TERMS at worst, a few in practice) instead of growing with
// C*R*S.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const int WM = 16; // invocations along M (pixels)
layout(constant_id = 1) const int WN = 16; // invocations along N (output channels)
layout(constant_id = 2) const int TM = 4;  // outputs per invocation along M
layout(constant_id = 3) const int TN = 4;  // outputs per invocation along N
layout(constant_id = 4) const int BK = 16; // reduction depth of a shared-memory slice
layout(constant_id = 6) const int TRANSPOSE = 0;
// the tensors' dtypes (common.glsl's DT_*): halves widen exactly on the tile loads, y is
// rounded once on store
layout(constant_id = 7) const int X_DT = DT_F32;
layout(constant_id = 8) const int W_DT = DT_F32;
layout(constant_id = 9) const int Y_DT = DT_F32;
// id 5: the workgroup size, WM * WN (set by conv.c)
layout(local_size_x_id = 5) in;

const int NT = WM * WN;
const int BM = WM * TM;
const int BN = WN * TN;
const int BNP = BN + 1; // padded row of the w slice: its stores (kk fastest) hit distinct banks

layout(std430, set = 0, binding = 0) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wt { uint ws[]; };
layout(std430, set = 0, binding = 2) buffer Y { uint ys[]; }; // 16-bit stores use atomics
layout(std430, set = 0, binding = 3) readonly buffer Bias { float bias[]; };

DEFINE_LOAD(load_x, xs)
DEFINE_LOAD(load_w, ws)
DEFINE_STORE(store_y, ys)

// Must match vk_conv_push in conv.c.
layout(push_constant) uniform Push {
    View x, w, y;
    int n, h, wd;     // x: batch, height, width
    int p, q;         // y: height, width
    int r, s;         // kernel height, width
    int cg, kg;       // input / output channels per group
    int sh, sw, ph, pw, dh, dw;
    int has_bias;
} pc;

shared float a_tile[BK * BM];  // [kk][m]: x patches
shared float b_tile[BK * BNP]; // [kk][n]: weights
// per pixel row m of the tile: x offset of its image, first input row and column of its
// window (conv2d: oh*sh - ph; transpose: oh'), y offset (entries past M are left unset)
shared int m_xb[BM], m_ih[BM], m_iw[BM], m_yo[BM];
// per output channel column n: its weights' offset in w, y offset
shared int n_wo[BN], n_yo[BN];
// per reduction index kk of the current slice: x channel offset, row and column added to the
// pixel's, weights offset
shared int k_c[BK], k_r[BK], k_s[BK], k_w[BK];

// The taps of one axis that reach outputs of phase ph (transpose): r = r0 + i*step, i < count,
// and the input index they read is o' + (ph + pad - r*dil) / stride.
void phase_taps(int ph, int pad, int dil, int stride, int taps, out int r0, out int step,
                out int count)
{
    r0 = -1;
    step = 1;
    count = 0;
    int bias = stride * taps * dil; // keeps the dividend >= 0
    for (int r = 0; r < taps; r++) {
        if ((ph + pad - r * dil + bias) % stride != 0) continue;
        if (r0 < 0)
            r0 = r;
        else if (count == 1)
            step = r - r0;
        count++;
    }
}

// Fills k_c..k_w for reduction indices k0 .. k0+BK-1 (invocations 0..BK-1).
void slice_table(int k0, int kred, int g, int ry0, int rstep, int nr, int sx0, int sstep, int ns,
                 int phy, int phx)
{
    int t = int(gl_LocalInvocationIndex);
    if (t >= BK) return;
    int kk = k0 + t;
    if (kk >= kred) return;
    int taps = nr * ns;
    int c = kk / taps, rs = kk - c * taps;
    int ri = rs / ns, si = rs - ri * ns;
    int r = ry0 + ri * rstep, s = sx0 + si * sstep;
    int cabs = g * pc.cg + c;
    k_c[t] = cabs * pc.x.sc;
    if (TRANSPOSE != 0) {
        k_r[t] = (phy + pc.ph - r * pc.dh + pc.sh * pc.r * pc.dh) / pc.sh - pc.r * pc.dh;
        k_s[t] = (phx + pc.pw - s * pc.dw + pc.sw * pc.s * pc.dw) / pc.sw - pc.s * pc.dw;
        k_w[t] = cabs * pc.w.sn + r * pc.w.sh + s * pc.w.sw;
    } else {
        k_r[t] = r * pc.dh;
        k_s[t] = s * pc.dw;
        k_w[t] = c * pc.w.sc + r * pc.w.sh + s * pc.w.sw;
    }
}

// (s, e) = a + b exactly (Knuth's TwoSum): no ordering of |a| and |b| needed.
void two_sum(float a, float b, out float s, out float e)
{
    precise float ss = a + b;
    precise float bb = ss - a;
    precise float ee = (a - (ss - bb)) + (b - bb);
    s = ss;
    e = ee;
}

void main()
{
    int t = int(gl_LocalInvocationIndex);
    int phases = TRANSPOSE != 0 ? pc.sh * pc.sw : 1;
    int z = int(gl_WorkGroupID.z);
    int g = z / phases, phase = z - g * phases;
    int phy = phase / pc.sw, phx = phase - phy * pc.sw;

    // this phase's output grid (pm x qm per image) and taps (nr x ns)
    int pm = pc.p, qm = pc.q;
    int ry0 = 0, rstep = 1, nr = pc.r, sx0 = 0, sstep = 1, ns = pc.s;
    if (TRANSPOSE != 0) {
        pm = phy < pc.p ? (pc.p - phy + pc.sh - 1) / pc.sh : 0;
        qm = phx < pc.q ? (pc.q - phx + pc.sw - 1) / pc.sw : 0;
        phase_taps(phy, pc.ph, pc.dh, pc.sh, pc.r, ry0, rstep, nr);
        phase_taps(phx, pc.pw, pc.dw, pc.sw, pc.s, sx0, sstep, ns);
    }
    int mtotal = pc.n * pm * qm;
    int m0 = int(gl_WorkGroupID.x) * BM, n0 = int(gl_WorkGroupID.y) * BN;
    if (m0 >= mtotal) return; // a phase smaller than the grid's x: the whole group leaves
    int kred = pc.cg * nr * ns;

    for (int i = t; i < BM; i += NT) {
        int m = m0 + i;
        if (m >= mtotal) continue;
        int b = m / (pm * qm), pq = m - b * (pm * qm);
        int oi = pq / qm, oj = pq - oi * qm;
        m_xb[i] = pc.x.off + b * pc.x.sn;
        if (TRANSPOSE != 0) {
            m_ih[i] = oi;
            m_iw[i] = oj;
            m_yo[i] = pc.y.off + b * pc.y.sn + (phy + oi * pc.sh) * pc.y.sh +
                      (phx + oj * pc.sw) * pc.y.sw;
        } else {
            m_ih[i] = oi * pc.sh - pc.ph;
            m_iw[i] = oj * pc.sw - pc.pw;
            m_yo[i] = pc.y.off + b * pc.y.sn + oi * pc.y.sh + oj * pc.y.sw;
        }
    }
    for (int i = t; i < BN; i += NT) {
        int kl = n0 + i;
        if (kl >= pc.kg) continue;
        n_wo[i] = pc.w.off + (TRANSPOSE != 0 ? kl * pc.w.sc : (g * pc.kg + kl) * pc.w.sn);
        n_yo[i] = (g * pc.kg + kl) * pc.y.sc;
    }
    slice_table(0, kred, g, ry0, rstep, nr, sx0, sstep, ns, phy, phx);
    barrier();

    int tm = t % WM, tn = t / WM;
    float hi[TM * TN], lo[TM * TN];
    for (int i = 0; i < TM * TN; i++) {
        hi[i] = 0.0;
        lo[i] = 0.0;
    }
    for (int k0 = 0; k0 < kred; k0 += BK) {
        // stage the slice: x patches (m fastest: neighbouring pixels, coalesced) ...
        for (int e = t; e < BM * BK; e += NT) {
            int i = e % BM, kk = e / BM;
            float v = 0.0;
            int ih = m_ih[i] + k_r[kk], iw = m_iw[i] + k_s[kk];
            if (m0 + i < mtotal && k0 + kk < kred && ih >= 0 && ih < pc.h && iw >= 0 && iw < pc.wd)
                v = load_x(X_DT, m_xb[i] + k_c[kk] + ih * pc.x.sh + iw * pc.x.sw);
            a_tile[kk * BM + i] = v;
        }
        // ... and weights (kk fastest: a channel's taps are contiguous in w)
        for (int e = t; e < BN * BK; e += NT) {
            int kk = e % BK, j = e / BK;
            float v = 0.0;
            if (n0 + j < pc.kg && k0 + kk < kred) v = load_w(W_DT, n_wo[j] + k_w[kk]);
            b_tile[kk * BNP + j] = v;
        }
        barrier();
        slice_table(k0 + BK, kred, g, ry0, rstep, nr, sx0, sstep, ns, phy, phx);
        precise float part[TM * TN];
        for (int i = 0; i < TM * TN; i++)
            part[i] = 0.0;
        for (int kk = 0; kk < BK; kk++) {
            float a[TM], bw[TN];
            for (int i = 0; i < TM; i++)
                a[i] = a_tile[kk * BM + tm + i * WM];
            for (int j = 0; j < TN; j++)
                bw[j] = b_tile[kk * BNP + tn + j * WN];
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < TN; j++)
                    part[i * TN + j] = fma(a[i], bw[j], part[i * TN + j]);
        }
        for (int i = 0; i < TM * TN; i++) {
            float e;
            two_sum(hi[i], part[i], hi[i], e);
            lo[i] += e;
        }
        barrier();
    }

    for (int j = 0; j < TN; j++) {
        int nj = tn + j * WN;
        if (n0 + nj >= pc.kg) continue;
        int yk = n_yo[nj];
        float bv = pc.has_bias != 0 ? bias[g * pc.kg + n0 + nj] : 0.0;
        for (int i = 0; i < TM; i++) {
            int mi = tm + i * WM;
            if (m0 + mi >= mtotal) continue;
            int yo = m_yo[mi];
            float h, e;
            two_sum(hi[i * TN + j], bv, h, e);
            store_y(Y_DT, yo + yk, h + (lo[i * TN + j] + e));
        }
    }
}
