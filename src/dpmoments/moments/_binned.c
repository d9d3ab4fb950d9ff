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
 */
#define DPM_BINNED_ABI 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include "../_buffer_checks.h"

static double row_norm(const double *z, Py_ssize_t d)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    Py_ssize_t k = 0;
    for (; k + 4 <= d; k += 4) {
        s0 += z[k] * z[k];
        s1 += z[k + 1] * z[k + 1];
        s2 += z[k + 2] * z[k + 2];
        s3 += z[k + 3] * z[k + 3];
    }
    for (; k < d; k++)
        s0 += z[k] * z[k];
    return sqrt((s0 + s1) + (s2 + s3));
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

/* bin_rows(block, center, scale, edges, work, counts, inside, outside, d) -> rows done
 * center, scale: d doubles or empty (none); work: at least d doubles (each row's z is written there);
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
    if (d < 1 || d > PY_SSIZE_T_MAX / 64 || bx.len % (d * 8) != 0 || bw.len < d * 8 || (bc.len && bc.len != d * 8) ||
        (bs.len && bs.len != d * 8) || bn.len != (g + 1) * 8 ||
        (sums && (bi.len != (g + 1) * d * 8 || bo.len != bi.len)) || (!sums && bo.len)) {
        PyErr_SetString(PyExc_ValueError, "bin_rows: inconsistent buffers");
        goto done;
    }
    const double *x = bx.buf, *center = bc.len ? bc.buf : NULL, *scale = bs.len ? bs.buf : NULL;
    const double *edges = be.buf;
    double *z = bw.buf, *inside = bi.buf, *outside = bo.buf;
    int64_t *counts = bn.buf;
    Py_ssize_t i = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n; i++) { /* one row at a time: z in L1, its norm, its bin, its sums */
        standardise(x + i * d, center, scale, z, d);
        double norm = row_norm(z, d);
        if (!isfinite(norm))
            break;
        Py_ssize_t b = bin_of(edges, g, norm);
        counts[b] += 1;
        if (sums) {
            double inverse = norm > 0.0 ? 1.0 / norm : 0.0; /* a zero row adds nothing */
            double *in = inside + b * d, *out = outside + b * d;
            for (Py_ssize_t k = 0; k < d; k++) {
                in[k] += z[k];
                out[k] += z[k] * inverse;
            }
        }
    }
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
    double *out = bo.buf, z[4096];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        standardise(x + i * d, center, NULL, z, d);
        out[i] = row_norm(z, d);
    }
    Py_END_ALLOW_THREADS
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
