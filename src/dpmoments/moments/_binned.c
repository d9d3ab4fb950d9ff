/* The binned pass of a private row bound, in C: each row's norm, its bin on the grid, and per-bin sums.
 *
 * For every row x of a block: z = (x - center) / scale, its norm, the grid bin of the norm (the first
 * edge at or above it: NumPy's searchsorted, side="left"), the bin's count, and (where sums are asked
 * for) z and z / ||z|| added to the bin's two sums. NumPy needs a centred copy, a norm reduction, a
 * search, and a sparse product over the block; here a row is read once from memory and the rest of its
 * work is done from L1. The norm is summed as the row clipping (_clip.c) sums it. At the first row whose
 * norm is not finite (a NaN/inf entry, or squares that overflow) the call stops and returns how many rows
 * it counted and summed: the caller takes the NumPy
 * path for the rest of the block. The work per row does not depend on its values beyond the bin it adds to
 * (the bin's search is branch-free).
 *
 * Only the Python C API's buffer protocol is used (no NumPy headers). Every entry point checks its
 * arguments once per call (float64/int64, C-contiguous, consistent lengths: ../_buffer_checks.h).
 *
 * ABI: the version of these entry points' signatures and meaning. moments/binned_sums.py uses this
 * module only where its ABI equals the one it expects (else the NumPy path): bump both, and see
 * docs/development.md, whenever an argument, a return value or what a call computes changes.
 * 1: bin_rows(block, center, scale, edges, work, counts, inside, outside, d), row_norms(block, center, out, d).
 * 2: bin_rows' work holds at least 4 d doubles (four rows are standardised and normed at once); the results are
 *    the same doubles as 1's.
 */
#define DPM_BINNED_ABI 2
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "../_buffer_checks.h"

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
/* An AVX2 copy where the CPU has it, chosen at load time; no FMA, so both copies round alike. */
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif
#if defined(__GNUC__) || defined(__clang__)
typedef double v4d __attribute__((vector_size(32)));
#endif

/* Four rows' sums of squares (rows z + r * stride, r = 0 .. 3, of d columns), each the double the row clipping
 * (_clip.c's clip_block) makes for that row alone: four running sums, sum l taking the columns l, l + 4, ...
 * in order, the last d mod 4 columns going to sum 0, then (s0 + s1) + (s2 + s3). The four rows' sums do not
 * wait on each other, so their adds overlap (one row alone waits on each add). */
static inline void four_sumsq(const double *z, Py_ssize_t stride, Py_ssize_t d, double *sumsq)
{
    double s[4][4];
    Py_ssize_t k = 0;
#if defined(__GNUC__) || defined(__clang__)
    v4d a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0, a2 = a0, a3 = a0, v0, v1, v2, v3;
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


static Py_ssize_t bin_of(const double *edges, Py_ssize_t g, double v)
{
    /* the number of edges below v (a branch-free lower bound: a row's bin is not guessable) */
    if (g == 0)
        return 0;
    const double *base = edges;
    Py_ssize_t n = g;
    while (n > 1) {
        Py_ssize_t half = n / 2;
        base = (base[half - 1] < v) ? base + half : base;
        n -= half;
    }
    return (base - edges) + (*base < v);
}

static void standardise(const double *x, const double *center, const double *scale, double *z, Py_ssize_t d)
{
    Py_ssize_t k;
    if (center && scale)
        for (k = 0; k < d; k++)
            z[k] = (x[k] - center[k]) / scale[k];
    else if (center)
        for (k = 0; k < d; k++)
            z[k] = x[k] - center[k];
    else if (scale)
        for (k = 0; k < d; k++)
            z[k] = x[k] / scale[k];
    else
        for (k = 0; k < d; k++)
            z[k] = x[k];
}

/* Rows i .. i + m - 1 (m <= 4) standardised into z (four rows of d; rows past m are zeros) and their norms. */
static inline void standardise_four(const double *x, const double *center, const double *scale, double *z,
                                    Py_ssize_t m, Py_ssize_t d, double *norm)
{
    for (Py_ssize_t r = 0; r < 4; r++)
        if (r < m)
            standardise(x + r * d, center, scale, z + r * d, d);
        else
            memset(z + r * d, 0, (size_t)d * sizeof(double));
    four_sumsq(z, d, d, norm);
    for (int r = 0; r < 4; r++)
        norm[r] = sqrt(norm[r]);
}

/* bin_rows' loop: the rows before the first whose norm is not finite are counted (and summed, where inside is
 * not NULL); their number. Rows are taken four at a time (standardised into z, 4 d doubles, and normed
 * together), then counted and summed one by one in order, so the counts and sums are those of one row at a
 * time. */
CLONES static Py_ssize_t bin_block(const double *x, const double *center, const double *scale,
                                   const double *edges, Py_ssize_t g, double *z, int64_t *counts,
                                   double *inside, double *outside, Py_ssize_t n, Py_ssize_t d)
{
    for (Py_ssize_t i = 0; i < n; i += 4) {
        Py_ssize_t m = n - i < 4 ? n - i : 4;
        double norm[4];
        standardise_four(x + i * d, center, scale, z, m, d, norm);
        for (Py_ssize_t r = 0; r < m; r++) {
            if (!isfinite(norm[r]))
                return i + r;
            Py_ssize_t b = bin_of(edges, g, norm[r]);
            counts[b] += 1;
            if (inside) {
                double inverse = norm[r] > 0.0 ? 1.0 / norm[r] : 0.0; /* a zero row adds nothing */
                const double *zr = z + r * d;
                double *in = inside + b * d, *out = outside + b * d;
                for (Py_ssize_t k = 0; k < d; k++) {
                    in[k] += zr[k];
                    out[k] += zr[k] * inverse;
                }
            }
        }
    }
    return n;
}

/* row_norms' loop, four rows at a time (the same doubles as one at a time). */
CLONES static void norm_block(const double *x, const double *center, double *z, double *out, Py_ssize_t n,
                              Py_ssize_t d)
{
    for (Py_ssize_t i = 0; i < n; i += 4) {
        Py_ssize_t m = n - i < 4 ? n - i : 4;
        double norm[4];
        standardise_four(x + i * d, center, NULL, z, m, d, norm);
        for (Py_ssize_t r = 0; r < m; r++)
            out[i + r] = norm[r];
    }
}

/* bin_rows(block, center, scale, edges, work, counts, inside, outside, d) -> rows done
 * center, scale: d doubles or empty (none); work: at least 4 d doubles (four rows' z are written there);
 * counts: len(edges) + 1 int64; inside, outside: (len(edges) + 1) x d doubles, or both empty (counts only).
 * The rows before the first whose norm is not finite are counted and summed; their number is returned. */
static PyObject *bin_rows(PyObject *self, PyObject *args)
{
    Py_buffer bx, bc, bs, be, bw, bn, bi, bo;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*w*w*n", &bx, &bc, &bs, &be, &bw, &bn, &bi, &bo, &d))
        return NULL;
    static const char *const names[] = {"block", "center", "scale", "edges", "work", "counts", "inside", "outside"};
    PyObject *result = NULL;
    if (!dpm_check_args(args, "dddddqdd", "bin_rows", names))
        goto done;
    Py_ssize_t g = be.len / 8, n = d > 0 && d <= PY_SSIZE_T_MAX / 64 ? bx.len / (d * 8) : 0;
    int sums = bi.len > 0;
    if (d < 1 || d > PY_SSIZE_T_MAX / 64 || bx.len % (d * 8) != 0 || bw.len < 4 * d * 8 || (bc.len && bc.len != d * 8) ||
        (bs.len && bs.len != d * 8) || bn.len != (g + 1) * 8 ||
        (sums && (bi.len != (g + 1) * d * 8 || bo.len != bi.len)) || (!sums && bo.len)) {
        PyErr_SetString(PyExc_ValueError, "bin_rows: inconsistent buffers");
        goto done;
    }
    const double *x = bx.buf, *center = bc.len ? bc.buf : NULL, *scale = bs.len ? bs.buf : NULL;
    const double *edges = be.buf;
    double *z = bw.buf, *inside = bi.buf, *outside = bo.buf;
    int64_t *counts = bn.buf;
    Py_ssize_t i;
    Py_BEGIN_ALLOW_THREADS
    i = bin_block(x, center, scale, edges, g, z, counts, sums ? inside : NULL, outside, n, d);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(i);
done:
    PyBuffer_Release(&bx);
    PyBuffer_Release(&bc);
    PyBuffer_Release(&bs);
    PyBuffer_Release(&be);
    PyBuffer_Release(&bw);
    PyBuffer_Release(&bn);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bo);
    return result;
}

/* row_norms(block, center, out, d) -> None: out[i] = ||x_i - center|| (center: d doubles or empty), summed as
 * bin_rows and the row clipping sum it; a NaN/inf entry or squares that overflow give a norm that is not finite. */
static PyObject *row_norms(PyObject *self, PyObject *args)
{
    Py_buffer bx, bc, bo;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*y*w*n", &bx, &bc, &bo, &d))
        return NULL;
    static const char *const names[] = {"block", "center", "out"};
    PyObject *result = NULL;
    if (!dpm_check_args(args, "ddd", "row_norms", names))
        goto done;
    Py_ssize_t n = d > 0 ? bx.len / (d * 8) : 0;
    if (d < 1 || d > 4096 || bx.len % (d * 8) != 0 || (bc.len && bc.len != d * 8) || bo.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "row_norms: inconsistent buffers");
        goto done;
    }
    const double *x = bx.buf, *center = bc.len ? bc.buf : NULL;
    double *out = bo.buf, *z = PyMem_Malloc(4 * (size_t)d * sizeof(double)); /* four rows' z */
    if (!z) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    norm_block(x, center, z, out, n, d);
    Py_END_ALLOW_THREADS
    PyMem_Free(z);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&bx);
    PyBuffer_Release(&bc);
    PyBuffer_Release(&bo);
    return result;
}

static PyMethodDef methods[] = {
    {"bin_rows", bin_rows, METH_VARARGS, "Count a block's row norms on a grid and sum its rows per bin."},
    {"row_norms", row_norms, METH_VARARGS, "The L2 norm of each row of a block about a centre."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_binned",
                                    "Compiled binned pass of dpmoments.moments.binned_sums.", -1, methods};

PyMODINIT_FUNC PyInit__binned(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ABI", DPM_BINNED_ABI) < 0)
        Py_CLEAR(m);
    return m;
}
