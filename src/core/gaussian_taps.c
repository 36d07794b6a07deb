/* OpenCV's getGaussianKernel taps, in the core so that ops and modules share one copy. */
#include "internal.h"

#include <math.h>

/*
 * OpenCV's fixed kernels for odd n <= 9 when sigma <= 0 (getGaussianKernel in
 * OpenCV 4.x: 1, 3, 5 and 7 taps from the old small table, 9 taps as x/256).
 */
static const float small_gaussian[5][9] = {
    {1.0f},
    {0.25f, 0.5f, 0.25f},
    {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f},
    {0.03125f, 0.109375f, 0.21875f, 0.28125f, 0.21875f, 0.109375f, 0.03125f},
    {4 / 256.0f, 13 / 256.0f, 30 / 256.0f, 51 / 256.0f, 60 / 256.0f, 51 / 256.0f, 30 / 256.0f,
     13 / 256.0f, 4 / 256.0f},
};

void lumen_gaussian_taps(int n, double sigma, float *out)
{
    if (n % 2 == 1 && n <= 9 && sigma <= 0) {
        for (int i = 0; i < n; i++)
            out[i] = small_gaussian[n / 2][i];
        return;
    }
    const double s = lumen_gaussian_sigma_of(sigma, n);
    const double scale2 = -0.5 / (s * s);
    /* Two passes (sum, then taps) instead of a buffer of doubles: nothing to allocate, and the
     * same values, since exp is computed the same way twice. */
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) * 0.5;
        sum += exp(scale2 * x * x);
    }
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) * 0.5;
        out[i] = (float)(exp(scale2 * x * x) / sum);
    }
}
