/* Rows' sums of squares, four rows at once: shared by _clip.c (the release's row clipping) and _binned.c (a
 * private bound's binned pass), so that both find every row's norm to the same bit.
 *
 * A row's squares go to four running sums: sum l takes the columns l, l + 4, l + 8, ... in order, the last
 * d mod 4 columns go to sum 0, and the row's sum of squares is (s0 + s1) + (s2 + s3). The four sums are the
 * four lanes of one vector; the four rows' vectors do not wait on each other, so their adds overlap (one
 * row alone waits on each add). No fused multiply-add is asked for, so a build for any x86-64 and its AVX2
 * copy round alike.
 */
#ifndef DPMOMENTS_ROW_NORMS_H
#define DPMOMENTS_ROW_NORMS_H
#include <Python.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
typedef double dpm_v4d __attribute__((vector_size(32)));
#endif

/* sumsq[r] for the rows z + r * stride, r = 0 .. 3, each of d columns. */
static inline void dpm_four_sumsq(const double *z, Py_ssize_t stride, Py_ssize_t d, double *sumsq)
{
    double s[4][4];
    Py_ssize_t k = 0;
#if defined(__GNUC__) || defined(__clang__)
    dpm_v4d a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0, a2 = a0, a3 = a0, v0, v1, v2, v3;
    for (; k + 4 <= d; k += 4) {
        memcpy(&v0, z + k, 32);
        memcpy(&v1, z + stride + k, 32);
        memcpy(&v2, z + 2 * stride + k, 32);
        memcpy(&v3, z + 3 * stride + k, 32);
        a0 += v0 * v0;
        a1 += v1 * v1;
        a2 += v2 * v2;
        a3 += v3 * v3;
    }
    memcpy(s[0], &a0, 32);
    memcpy(s[1], &a1, 32);
    memcpy(s[2], &a2, 32);
    memcpy(s[3], &a3, 32);
#else
    for (int r = 0; r < 4; r++)
        s[r][0] = s[r][1] = s[r][2] = s[r][3] = 0.0;
    for (; k + 4 <= d; k += 4)
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < 4; l++)
                s[r][l] += z[r * stride + k + l] * z[r * stride + k + l];
#endif
    for (int r = 0; r < 4; r++) {
        for (Py_ssize_t t = k; t < d; t++)
            s[r][0] += z[r * stride + t] * z[r * stride + t];
        sumsq[r] = (s[r][0] + s[r][1]) + (s[r][2] + s[r][3]);
    }
}

#endif
