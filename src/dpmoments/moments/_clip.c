/* Row clipping for the moment pass, in C: x -> x min(1, bound / ||x||), row by row.
 *
 * NumPy needs a row-norm reduction, four small vector operations and a broadcast
 * multiply, i.e. two passes over the block and a temporary; here each row is read
 * once for its sum of squares and once (from L1) for the scaled write. Every row
 * is multiplied, by exactly 1 when it lies inside the ball, so the work does not
 * depend on which rows were clipped. A row whose sum of squares is not finite (a
 * NaN/inf entry, or squares that overflow) stops the pass: the caller takes its
 * overflow-safe NumPy path for the block. In and out may be the same buffer.
 *
 * clip_gram fuses the clipping with the Gram product for rows of up to GRAM_MAX_D columns (the
 * caller uses it up to 96), where a separate clipping pass, a read and a write of every row, costs
 * a fifth to a half of BLAS's product: each row is read once, fetched ahead while the previous
 * panel's products are summed (see clip_gram below).
 *
 * Only the Python C API's buffer protocol is used (no NumPy headers). Every entry point checks its
 * arguments once per call (float64, C-contiguous, consistent lengths: ../_buffer_checks.h).
 *
 * ABI: the version of these entry points' signatures and meaning. moments/accumulate.py uses this
 * module only where its ABI equals the one it expects (else the NumPy path): bump both, and see
 * docs/development.md, whenever an argument, a return value or what a call computes changes.
 * 1: clip_rows(block, out, d, bound) and clip_gram(block, center, gram, d, bound). The constant
 * GRAM_MAX_D (the widest rows clip_gram takes) came later without a bump: the calls and their bits
 * are the same, a build without it is used up to 24 columns.
 */
#define DPM_CLIP_ABI 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <string.h>
#include "../_buffer_checks.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
/* Rows per panel of clip_gram (a multiple of 4): the panel, transposed, stays in L1 while it is
 * clipped and its products are formed. */
#define PANEL_ROWS 64
/* The widest rows clip_gram accepts (exported as GRAM_MAX_D; the caller uses it up to d = 96: from about
 * 100 columns on, clipping and then BLAS's product measured faster). */
#define GRAM_MAX_D 128
#define PAD4(d) (((d) + 3) & ~(Py_ssize_t)3)

#if defined(__GNUC__) || defined(__clang__)
typedef double v4d __attribute__((vector_size(32)));
typedef double v4d_unaligned __attribute__((vector_size(32), aligned(8)));
/* One read of four doubles into a register: a volatile read happens once, so a value used twice is not
 * read from memory twice (as a folded operand of each product). */
#define LOAD_ONCE(p) (*(const volatile v4d_unaligned *)(p))
#define PREFETCH(p) __builtin_prefetch((p), 0, 3)
typedef long long v4i __attribute__((vector_size(32)));
#else
#define PREFETCH(p) ((void)0)
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define V4D_SHUFFLE(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4i){i, j, k, l})
#elif defined(__clang__)
#define V4D_SHUFFLE(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#endif

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
/* An AVX2 copy where the CPU has it, chosen at load time; no FMA, so both copies round alike. */
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* clip_rows' loop: 0 at the first row whose sum of squares is not finite. The four running sums are
 * the four lanes of one vector (an AVX2 copy where the CPU has it); both copies round alike. */
CLONES static int clip_block(const double *in, double *out, Py_ssize_t n, Py_ssize_t d, double bound)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *x = in + i * d;
        double *o = out + i * d, s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        Py_ssize_t k = 0;
#if defined(__GNUC__) || defined(__clang__)
        v4d acc = {0.0, 0.0, 0.0, 0.0}, v;
        for (; k + 4 <= d; k += 4) { /* four running sums: the adds overlap instead of waiting on each other */
            memcpy(&v, x + k, 32);
            acc += v * v;
        }
        s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3];
#else
        for (; k + 4 <= d; k += 4) { /* four running sums: the adds overlap instead of waiting on each other */
            s0 += x[k] * x[k];
            s1 += x[k + 1] * x[k + 1];
            s2 += x[k + 2] * x[k + 2];
            s3 += x[k + 3] * x[k + 3];
        }
#endif
        for (; k < d; k++)
            s0 += x[k] * x[k];
        double s = (s0 + s1) + (s2 + s3);
        if (!isfinite(s))
            return 0;
        double scale = bound / sqrt(s); /* a zero row gives inf, then 1 */
        scale = scale < 1.0 ? scale : 1.0;
        for (k = 0; k < d; k++)
            o[k] = x[k] * scale;
    }
    return 1;
}

/* clip_rows(block, out, d, bound) -> bool: True when every row was finite and out is written. */
static PyObject *clip_rows(PyObject *self, PyObject *args)
{
    Py_buffer bi, bo;
    Py_ssize_t d;
    double bound;
    static const char *const names[] = {"block", "out"};
    if (!PyArg_ParseTuple(args, "y*w*nd", &bi, &bo, &d, &bound))
        return NULL;
    PyObject *result = NULL;
    if (!dpm_check_args(args, "dd", "clip_rows", names))
        goto done;
    if (d < 1 || d > PY_SSIZE_T_MAX / 64 || bi.len % (d * 8) != 0 || bo.len < bi.len) {
        PyErr_SetString(PyExc_ValueError, "clip_rows: inconsistent buffers");
        goto done;
    }
    const double *in = bi.buf;
    double *out = bo.buf;
    Py_ssize_t n = bi.len / (d * 8);
    int finite;
    Py_BEGIN_ALLOW_THREADS
    finite = clip_block(in, out, n, d, bound);
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(finite);
done:
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bo);
    return result;
}

/* Q[k * PANEL_ROWS + r] = x[r][k] - c[k] (c may be NULL) for the panel's m rows: the rows read in order,
 * as they lie in memory, and (GCC) turned four by four in registers. */
static inline void transpose_panel(const double *in, const double *c, Py_ssize_t m, Py_ssize_t d, double *Q)
{
    const Py_ssize_t M = PANEL_ROWS;
    Py_ssize_t r = 0;
#ifdef V4D_SHUFFLE
    for (; r + 4 <= m && d >= 4; r += 4) {
        const double *x = in + r * d;
        for (Py_ssize_t k = 0; k < d; k += 4) {
            if (k + 4 > d)
                k = d - 4; /* the last four columns, overlapping some already written (the same values) */
            v4d r0, r1, r2, r3, cv = {0.0, 0.0, 0.0, 0.0};
            memcpy(&r0, x + k, 32); memcpy(&r1, x + d + k, 32);
            memcpy(&r2, x + 2 * d + k, 32); memcpy(&r3, x + 3 * d + k, 32);
            if (c) {
                memcpy(&cv, c + k, 32);
                r0 -= cv; r1 -= cv; r2 -= cv; r3 -= cv;
            }
            v4d t0 = V4D_SHUFFLE(r0, r1, 0, 4, 2, 6), t1 = V4D_SHUFFLE(r0, r1, 1, 5, 3, 7);
            v4d t2 = V4D_SHUFFLE(r2, r3, 0, 4, 2, 6), t3 = V4D_SHUFFLE(r2, r3, 1, 5, 3, 7);
            v4d q0 = V4D_SHUFFLE(t0, t2, 0, 1, 4, 5), q1 = V4D_SHUFFLE(t1, t3, 0, 1, 4, 5);
            v4d q2 = V4D_SHUFFLE(t0, t2, 2, 3, 6, 7), q3 = V4D_SHUFFLE(t1, t3, 2, 3, 6, 7);
            memcpy(Q + k * M + r, &q0, 32); memcpy(Q + (k + 1) * M + r, &q1, 32);
            memcpy(Q + (k + 2) * M + r, &q2, 32); memcpy(Q + (k + 3) * M + r, &q3, 32);
        }
    }
#endif
    for (; r < m; r++) {
        const double *x = in + r * d;
        for (Py_ssize_t k = 0; k < d; k++)
            Q[k * M + r] = c ? x[k] - c[k] : x[k];
    }
}

/* One panel of m <= PANEL_ROWS rows: centred (when c is given) and clipped into Q, the panel
 * transposed (Q[k * PANEL_ROWS + r], padded rows and columns 0), then its products added to the
 * lane sums L. Four rows are taken at once, one per lane of a vector: the squared norms, the
 * square roots, the divisions and the products all vectorise across rows, and each lane of
 * L[(j * dp + k) * 4 + l] adds the rows l, l + 4, l + 8, ... of the block in order (so a block's sums
 * do not depend on the panel size). Returns 0, with L untouched, when a row's sum of squares is not
 * finite. */
CLONES static int clip_panel_gram(const double *in, const double *c, Py_ssize_t m, Py_ssize_t d,
                                  Py_ssize_t dp, double bound, double *Q, double *L, const char *ahead,
                                  Py_ssize_t ahead_len)
{
    const Py_ssize_t M = PANEL_ROWS;
    transpose_panel(in, c, m, d, Q);
    for (Py_ssize_t k = 0; k < d && m < M; k++)
        for (Py_ssize_t r = m; r < M; r++)
            Q[k * M + r] = 0.0;
    double scale[PANEL_ROWS];
    for (Py_ssize_t r = 0; r < M; r++)
        scale[r] = 0.0;
    for (Py_ssize_t k = 0; k < d; k++) /* each row's squares summed in column order */
        for (Py_ssize_t r = 0; r < M; r++)
            scale[r] += Q[k * M + r] * Q[k * M + r];
    int finite = 1;
    for (Py_ssize_t r = 0; r < M; r++)
        finite &= scale[r] <= DBL_MAX; /* false for inf and NaN */
    if (!finite)
        return 0;
    Py_ssize_t r = 0;
#ifdef __SSE2__ /* every x86-64: two square roots and divisions at once, rounded as one at a time */
    const __m128d b2 = _mm_set1_pd(bound), one = _mm_set1_pd(1.0);
    for (; r + 2 <= M; r += 2)
        _mm_storeu_pd(scale + r, _mm_min_pd(_mm_div_pd(b2, _mm_sqrt_pd(_mm_loadu_pd(scale + r))), one));
#endif
    for (; r < M; r++) {
        double t = bound / sqrt(scale[r]); /* a zero row gives inf, then 1 */
        scale[r] = t < 1.0 ? t : 1.0;
    }
    for (Py_ssize_t k = 0; k < d; k++)
        for (Py_ssize_t r = 0; r < M; r++)
            Q[k * M + r] *= scale[r];
    Py_ssize_t mr = (m + 3) & ~(Py_ssize_t)3; /* the rows up to the next 4 (zeros past m) */
    /* Tiles of two columns j, j + 1 by four columns k .. k + 3 from the diagonal's tile on: eight running
     * sums in registers, six loads for sixteen vector operations (each k column read once per step:
     * LOAD_ONCE keeps the compiler from reading it again for its second product). Entries below the
     * diagonal in a tile are summed too (the tile is whole) and never read. While the tiles are summed,
     * the next panel's rows (ahead, ahead_len bytes) are fetched into the cache a few lines per tile, so
     * its transposition reads them from the cache, not from memory. */
    Py_ssize_t tiles = 0;
    for (Py_ssize_t j = 0; j < dp; j += 2)
        tiles += (dp - (j & ~(Py_ssize_t)3)) / 4;
    const Py_ssize_t per_tile = (ahead_len / 64 + tiles) / tiles; /* cache lines, rounded up */
    const char *pf = ahead, *pf_end = ahead + ahead_len;
    for (Py_ssize_t j = 0; j < dp; j += 2)
        for (Py_ssize_t k = j & ~(Py_ssize_t)3; k < dp; k += 4) {
            for (Py_ssize_t t = 0; t < per_tile && pf < pf_end; t++, pf += 64)
                PREFETCH(pf);
            const double *qj0 = Q + j * M, *qj1 = qj0 + M, *qk = Q + k * M;
            double *l0 = L + (j * dp + k) * 4, *l1 = l0 + dp * 4;
#if defined(__GNUC__) || defined(__clang__)
            v4d a00, a01, a02, a03, a10, a11, a12, a13, x0, x1, y;
            memcpy(&a00, l0, 32); memcpy(&a01, l0 + 4, 32); memcpy(&a02, l0 + 8, 32); memcpy(&a03, l0 + 12, 32);
            memcpy(&a10, l1, 32); memcpy(&a11, l1 + 4, 32); memcpy(&a12, l1 + 8, 32); memcpy(&a13, l1 + 12, 32);
            for (Py_ssize_t r = 0; r < mr; r += 4) {
                memcpy(&x0, qj0 + r, 32); memcpy(&x1, qj1 + r, 32);
                y = LOAD_ONCE(qk + r);         a00 += x0 * y; a10 += x1 * y;
                y = LOAD_ONCE(qk + M + r);     a01 += x0 * y; a11 += x1 * y;
                y = LOAD_ONCE(qk + 2 * M + r); a02 += x0 * y; a12 += x1 * y;
                y = LOAD_ONCE(qk + 3 * M + r); a03 += x0 * y; a13 += x1 * y;
            }
            memcpy(l0, &a00, 32); memcpy(l0 + 4, &a01, 32); memcpy(l0 + 8, &a02, 32); memcpy(l0 + 12, &a03, 32);
            memcpy(l1, &a10, 32); memcpy(l1 + 4, &a11, 32); memcpy(l1 + 8, &a12, 32); memcpy(l1 + 12, &a13, 32);
#else
            for (Py_ssize_t r = 0; r < mr; r += 4)
                for (int c = 0; c < 4; c++)
                    for (int l = 0; l < 4; l++) {
                        l0[c * 4 + l] += qj0[r + l] * qk[c * M + r + l];
                        l1[c * 4 + l] += qj1[r + l] * qk[c * M + r + l];
                    }
#endif
        }
    return 1;
}

/* clip_gram(block, center, gram, d, bound) -> bool.
 *
 * Adds to the d x d buffer ``gram`` the Gram matrix sum_i c_i c_i^T of the block's rows, each
 * centred (when ``center`` is not None) and clipped: c = x min(1, bound/||x||), every row multiplied,
 * by exactly 1 inside the ball, so the work does not depend on which rows were clipped. Each row is
 * read from memory once: a panel of rows is centred, transposed and clipped in an L1-sized buffer,
 * then its products are added to running sums. How it rounds, exactly: a row's squared norm is summed
 * in column order (clip_rows uses four running sums, so a scale can differ from clip_rows' in its last
 * bit); entry (j, k) of the block is ((S0 + S1) + (S2 + S3)), where Sl adds the products of rows l,
 * l + 4, l + 8, ... of the block one at a time, in order, no fused multiply-add (the vector, AVX2 and
 * plain-C loops give the same bits; a build that lets the compiler contract to FMA, -march=native, does
 * not); BLAS sums in its own blocked order, so this and the NumPy path agree to rounding, not to the
 * bit. The block's sums are added to gram's upper triangle and mirrored, so gram stays exactly
 * symmetric. A row whose sum of squares is not finite stops the call before gram is touched: False,
 * and the caller takes its overflow-safe NumPy path for the block.
 */
static PyObject *clip_gram(PyObject *self, PyObject *args)
{
    Py_buffer bi, bg, bc = {0};
    PyObject *center_obj;
    Py_ssize_t d;
    double bound;
    if (!PyArg_ParseTuple(args, "y*Ow*nd", &bi, &center_obj, &bg, &d, &bound))
        return NULL;
    PyObject *result = NULL;
    double *P = NULL, *T = NULL;
    static const char *const names[] = {"block", "center", "gram"};
    if (!dpm_check_args(args, center_obj == Py_None ? "d-d" : "ddd", "clip_gram", names))
        goto done;
    if (center_obj != Py_None && PyObject_GetBuffer(center_obj, &bc, PyBUF_SIMPLE) < 0)
        goto done;
    if (d < 1 || d > GRAM_MAX_D || bi.len % (d * 8) != 0 || bg.len != d * d * 8
        || (bc.buf && bc.len != d * 8)) {
        PyErr_SetString(PyExc_ValueError, "clip_gram: inconsistent buffers");
        goto done;
    }
    const double *in = bi.buf, *c = bc.buf;
    double *G = bg.buf;
    Py_ssize_t n = bi.len / (d * 8), dp = PAD4(d);
    P = PyMem_Calloc(PANEL_ROWS * dp, sizeof(double)); /* the transposed panel; a padding column stays 0 */
    T = PyMem_Calloc(dp * dp * 4, sizeof(double));     /* four lane sums per entry */
    if (!P || !T) {
        PyErr_NoMemory();
        goto done;
    }
    int finite = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t lo = 0; lo < n && finite; lo += PANEL_ROWS) {
        Py_ssize_t m = n - lo < PANEL_ROWS ? n - lo : PANEL_ROWS;
        const double *next = in + (lo + m) * d; /* the next panel's rows, fetched while this one is summed */
        Py_ssize_t next_rows = n - lo - m < PANEL_ROWS ? n - lo - m : PANEL_ROWS;
        finite = clip_panel_gram(in + lo * d, c, m, d, dp, bound, P, T, (const char *)next, next_rows * d * 8);
    }
    if (finite)
        for (Py_ssize_t j = 0; j < d; j++)
            for (Py_ssize_t k = j; k < d; k++) {
                const double *l = T + (j * dp + k) * 4;
                double t = (l[0] + l[1]) + (l[2] + l[3]);
                G[j * d + k] += t;
                if (k != j)
                    G[k * d + j] += t;
            }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(finite);
done:
    PyMem_Free(P);
    PyMem_Free(T);
    if (bc.buf)
        PyBuffer_Release(&bc);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bg);
    return result;
}

static PyMethodDef methods[] = {
    {"clip_rows", clip_rows, METH_VARARGS, "Scale each row of a C-contiguous float64 block into the L2 ball."},
    {"clip_gram", clip_gram, METH_VARARGS,
     "Add the Gram matrix of a block's centred, clipped rows (d <= GRAM_MAX_D) to a d x d float64 buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_clip", "Compiled row clipping of dpmoments.moments.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__clip(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "ABI", DPM_CLIP_ABI) < 0
              || PyModule_AddIntConstant(m, "GRAM_MAX_D", GRAM_MAX_D) < 0))
        Py_CLEAR(m);
    return m;
}
