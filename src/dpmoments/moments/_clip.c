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
 * Only the Python C API's buffer protocol is used (no NumPy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* clip_rows(block, out, d, bound) -> bool: True when every row was finite and out is written. */
static PyObject *clip_rows(PyObject *self, PyObject *args)
{
    Py_buffer bi, bo;
    Py_ssize_t d;
    double bound;
    if (!PyArg_ParseTuple(args, "y*w*nd", &bi, &bo, &d, &bound))
        return NULL;
    PyObject *result = NULL;
    if (d < 1 || bi.len % (d * 8) != 0 || bo.len < bi.len) {
        PyErr_SetString(PyExc_ValueError, "clip_rows: inconsistent buffers");
        goto done;
    }
    const double *in = bi.buf;
    double *out = bo.buf;
    Py_ssize_t n = bi.len / (d * 8);
    int finite = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *x = in + i * d;
        double *o = out + i * d, s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        Py_ssize_t k = 0;
        for (; k + 4 <= d; k += 4) { /* four running sums: the adds overlap instead of waiting on each other */
            s0 += x[k] * x[k];
            s1 += x[k + 1] * x[k + 1];
            s2 += x[k + 2] * x[k + 2];
            s3 += x[k + 3] * x[k + 3];
        }
        for (; k < d; k++)
            s0 += x[k] * x[k];
        double s = (s0 + s1) + (s2 + s3);
        if (!isfinite(s)) {
            finite = 0;
            break;
        }
        double scale = bound / sqrt(s); /* a zero row gives inf, then 1 */
        scale = scale < 1.0 ? scale : 1.0;
        for (k = 0; k < d; k++)
            o[k] = x[k] * scale;
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(finite);
done:
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bo);
    return result;
}

static PyMethodDef methods[] = {
    {"clip_rows", clip_rows, METH_VARARGS, "Scale each row of a C-contiguous float64 block into the L2 ball."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_clip", "Compiled row clipping of dpmoments.moments.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__clip(void) { return PyModule_Create(&module); }
