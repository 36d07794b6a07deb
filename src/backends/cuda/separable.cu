/*
 * Separable filtering: a row pass (kx, src -> an f32 intermediate T in pool memory) then a
 * column pass (ky, T -> dst, times job->scale), both on the tiled kernel of direct.cu.
 *
 * T holds the row-filtered rows of the image only. The column pass maps out-of-image rows by
 * the border rule onto rows of T, which is exact because the rule maps x and y independently:
 * row by(y') filtered is T[by(y')]. For the constant border an out-of-image row is v
 * everywhere, so its filtered value is sum(kx) * v, the column pass's "constant".
 * That is the reference's sum_i ky[i] * (sum_j kx[j] * src(..)) * scale, in f32.
 *
 * Also the fast Gaussian (for now): the exact separable Gaussian with OpenCV's taps.
 */
#include "cuda_views.h"

#include <cmath>
#include <vector>

/* Both passes of kx (kw taps) and ky (kh taps) from op.src to op.dst. */
static lumen_status sep_run(cu_op &op, const float *kx, int kw, const float *ky, int kh, int ax,
                            int ay, int border, float bval, float scale)
{
    lumen_status s;
    std::vector<float> taps;
    try {
        taps.assign(kx, kx + kw);
        taps.insert(taps.end(), ky, ky + kh);
    } catch (...) {
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: separable taps: out of memory");
    }
    const float *dtaps;
    if ((s = cu_op_upload_floats(op, taps.data(), taps.size(), &dtaps))) return s;

    /* T: f32, planar NCHW, packed */
    const cu_view &src = op.src.v;
    cu_view t = src;
    t.dtype = LUMEN_F32, t.es = 4;
    t.sw = 1, t.sh = t.w, t.sc = t.h * t.w, t.sn = t.c * t.h * t.w;
    void *tbuf;
    if ((s = cu_op_scratch(op, (size_t)(t.n * t.sn) * sizeof(float), &tbuf, "separable intermediate")))
        return s;
    t.data = static_cast<char *>(tbuf);

    double ksum = 0.0;
    for (int j = 0; j < kw; j++) ksum += (double)kx[j];
    const float row_const = (float)(ksum * (double)bval);

    cu_tile_job rows = {src, t, dtaps, kw, 1, ax, 0, border, bval, 1.0f, nullptr};
    cu_tile_job cols = {t, op.dst.v, dtaps + kw, 1, kh, 0, ay, border, row_const, scale, nullptr};
    if ((s = cu_tile_filter(op.st, rows, CU_TILE_ROW))) return s;
    return cu_tile_filter(op.st, cols, CU_TILE_COL);
}

lumen_status cu_sep_filter(lumen_context *ctx, const lumen_filter_job *job)
{
    if (!job->kx || !job->ky)
        return cu_host->set_error(LUMEN_ERR_INTERNAL, "cuda: separable filter without kx, ky");
    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    cu_op op(ctx, st);
    if ((s = cu_op_start(op, job->src, job->dst)) ||
        (s = sep_run(op, job->kx, job->kw, job->ky, job->kh, job->ax, job->ay, (int)job->border,
                     job->border_value, job->scale)))
        return s;
    return cu_op_finish(op);
}

/* ---- the fast Gaussian -------------------------------------------------------------- */

/*
 * For now the fast Gaussian runs the exact one: OpenCV's kernel with the size the exact blur
 * derives for f32 data (round(8 sigma + 1) | 1), which is the reference the fast Gaussian's
 * error bound is stated against (docs/gaussian-fast.md). Its cost grows with sigma, unlike the
 * CPU's recursive filter; beyond GF_MAX_TAPS taps on an axis it declines (unsupported), so the
 * runtime runs the CPU's recursive filter instead (an error in strict mode).
 */
#define GF_MAX_TAPS 4097

lumen_status cu_gaussian_fast(lumen_context *ctx, const lumen_gauss_job *job)
{
    const int nx = lumen_gaussian_ksize_of(job->sigma_x, 0),
              ny = lumen_gaussian_ksize_of(job->sigma_y, 0);
    if (nx > GF_MAX_TAPS || ny > GF_MAX_TAPS)
        return cu_host->set_error(LUMEN_ERR_UNSUPPORTED,
                                  "precision: the fast Gaussian on CUDA runs the exact kernel, up to "
                                  "%d taps; sigma (%g, %g) needs (%d, %d)",
                                  GF_MAX_TAPS, job->sigma_x, job->sigma_y, nx, ny);
    std::vector<float> kx, ky;
    try {
        kx.resize((size_t)nx);
        ky.resize((size_t)ny);
    } catch (...) {
        return cu_host->set_error(LUMEN_ERR_OUT_OF_MEMORY, "cuda: Gaussian taps: out of memory");
    }
    cu_host->gaussian_kernel(nx, job->sigma_x, kx.data());
    cu_host->gaussian_kernel(ny, job->sigma_y, ky.data());
    cu_host->log(LUMEN_LOG_DEBUG, "cuda: fast Gaussian sigma (%g, %g) runs the exact %dx%d kernel",
                 job->sigma_x, job->sigma_y, nx, ny);
    cu_state *st;
    lumen_status s = cu_begin(ctx, &st);
    if (s) return s;
    cu_op op(ctx, st);
    if ((s = cu_op_start(op, job->src, job->dst)) ||
        (s = sep_run(op, kx.data(), nx, ky.data(), ny, nx / 2, ny / 2, (int)job->border,
                     job->border_value, 1.0f)))
        return s;
    return cu_op_finish(op);
}
