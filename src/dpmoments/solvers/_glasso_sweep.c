/* One sweep of the graphical-lasso dual block-coordinate ascent, in C.
 *
 * The same algorithm as the pure-NumPy sweep in glasso_bcd.py (which stays as the
 * fallback where this extension was not built): for every column j, the exact lasso
 *     min_x  1/2 x' W_AA x - b_A' x + alpha |x|_1     (b = S[j], A = active set)
 * by feature-sign search (Lee, Battle, Raina & Ng 2007), then w = W[:, A] x replaces
 * row and column j of W. What NumPy spends here is call overhead: about ten small
 * array operations per step, each ~1-10 us, for columns whose arithmetic is O(p k).
 * In C a column costs its arithmetic only.
 *
 * Active sets travel as CSR arrays (indptr, indices, values), one row per column:
 * the old sweep's are read, the new sweep's written. The caller guarantees room for
 * at least p entries before each column; when less is left the sweep returns the
 * column it stopped at and the caller grows the arrays and resumes there.
 *
 * Only the Python C API's buffer protocol is used (no NumPy headers), so building
 * needs nothing but a C compiler. The GIL is released during the sweep. Every entry point checks its
 * arguments once per call (float64/int64, C-contiguous, lengths, CSR pointers and indices in range:
 * ../_buffer_checks.h and csr_ok below), so a bad call is a ValueError/TypeError, never a read out of bounds.
 *
 * ABI: the version of these entry points' signatures and meaning. solvers/glasso_bcd.py and
 * glasso_certificate.py use this module only where its ABI equals the one they expect (else NumPy): bump
 * both, and see docs/development.md, whenever an argument, a return value or what a call computes changes.
 * 1: sweep(16 arguments below), residual(W, indptr, indices, data), extrapolate(out, W1, W0, S, r, alpha).
 */
#define DPM_GLASSO_SWEEP_ABI 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../_buffer_checks.h"

typedef struct {
    Py_ssize_t p;
    double *W;            /* p x p, row-major, symmetric; updated in place */
    const double *S;      /* p x p */
    const double *diag;   /* p */
    double alpha, thr;
    Py_ssize_t max_steps, max_add;
    /* work, sized p (or cap x cap) */
    int64_t *A;
    double *x, *xn, *sgn, *w, *z, *best, *ts;
    int64_t *cross;
    char *in_A;
    double *WAA, *L;      /* cap x cap */
    Py_ssize_t cap;
} Ctx;

static int grow_square(Ctx *c, Py_ssize_t k)
{
    if (k <= c->cap)
        return 0;
    Py_ssize_t cap = c->cap ? c->cap : 16;
    while (cap < k)
        cap *= 2;
    double *a = realloc(c->WAA, (size_t)cap * cap * sizeof(double));
    if (!a)
        return -1;
    c->WAA = a;
    double *l = realloc(c->L, (size_t)cap * cap * sizeof(double));
    if (!l)
        return -1;
    c->L = l;
    c->cap = cap;
    return 0;
}

static double sign(double v) { return (v > 0) - (v < 0); }

/* Cholesky of the k x k matrix in L (row-major, lower part used); 0 when positive definite. */
static int cholesky(double *L, Py_ssize_t k)
{
    for (Py_ssize_t i = 0; i < k; i++) {
        for (Py_ssize_t jj = 0; jj <= i; jj++) {
            double s = L[i * k + jj];
            for (Py_ssize_t m = 0; m < jj; m++)
                s -= L[i * k + m] * L[jj * k + m];
            if (i == jj) {
                if (!(s > 0) || !isfinite(s))
                    return -1;
                L[i * k + i] = sqrt(s);
            } else {
                L[i * k + jj] = s / L[jj * k + jj];
            }
        }
    }
    return 0;
}

static void cho_solve(const double *L, Py_ssize_t k, double *v)
{
    for (Py_ssize_t i = 0; i < k; i++) {
        double s = v[i];
        for (Py_ssize_t m = 0; m < i; m++)
            s -= L[i * k + m] * v[m];
        v[i] = s / L[i * k + i];
    }
    for (Py_ssize_t i = k - 1; i >= 0; i--) {
        double s = v[i];
        for (Py_ssize_t m = i + 1; m < k; m++)
            s -= L[m * k + i] * v[m];
        v[i] = s / L[i * k + i];
    }
}

/* 1/2 z' WAA z - b_A' z + alpha |z|_1 */
static double lasso_value(const Ctx *c, const double *b, Py_ssize_t k, const double *z)
{
    double quad = 0, lin = 0, l1 = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (z[i] == 0)
            continue;
        double row = 0;
        const double *Wi = c->WAA + i * k;
        for (Py_ssize_t m = 0; m < k; m++)
            row += Wi[m] * z[m];
        quad += z[i] * row;
        lin += b[c->A[i]] * z[i];
        l1 += fabs(z[i]);
    }
    return 0.5 * quad - lin + c->alpha * l1;
}

/* acc[m] += sum_q coef[q] * rows[q][m] for m < p, q < k: four rows per pass, so acc is loaded and
 * stored once per four rows instead of once per row (the loop is bound by those loads and stores). */
static void accumulate(double *acc, const double *W, Py_ssize_t p, const int64_t *idx, const double *coef,
                       Py_ssize_t k)
{
    Py_ssize_t q = 0;
    for (; q + 4 <= k; q += 4) {
        const double a0 = coef[q], a1 = coef[q + 1], a2 = coef[q + 2], a3 = coef[q + 3];
        const double *r0 = W + idx[q] * p, *r1 = W + idx[q + 1] * p, *r2 = W + idx[q + 2] * p,
                     *r3 = W + idx[q + 3] * p;
        for (Py_ssize_t m = 0; m < p; m++)
            acc[m] += (a0 * r0[m] + a1 * r1[m]) + (a2 * r2[m] + a3 * r3[m]);
    }
    for (; q + 2 <= k; q += 2) {
        const double a0 = coef[q], a1 = coef[q + 1];
        const double *r0 = W + idx[q] * p, *r1 = W + idx[q + 1] * p;
        for (Py_ssize_t m = 0; m < p; m++)
            acc[m] += a0 * r0[m] + a1 * r1[m];
    }
    for (; q < k; q++) {
        const double a0 = coef[q], *r0 = W + idx[q] * p;
        for (Py_ssize_t m = 0; m < p; m++)
            acc[m] += a0 * r0[m];
    }
}

/* The exact column lasso; A, x (length *k) hold the warm start and the answer, c->w gets W[:, A] x.
 * Returns 0 (solved), 1 (step cap hit), 2 (W_AA not positive definite), -1 (out of memory). */
static int column_lasso(Ctx *c, Py_ssize_t j, Py_ssize_t *kp)
{
    const Py_ssize_t p = c->p;
    const double *b = c->S + j * p;
    double *W = c->W;
    int64_t *A = c->A;
    double *x = c->x, *sgn = c->sgn, *w = c->w;
    Py_ssize_t k = *kp, steps = 0;
    for (Py_ssize_t i = 0; i < k; i++)
        sgn[i] = sign(x[i]);
    for (;;) {
        /* ---- optimise over the active set with the current sign pattern ---- */
        while (k > 0 && steps < c->max_steps) {
            steps++;
            if (grow_square(c, k) < 0)
                return -1;
            double *WAA = c->WAA, *L = c->L, *xn = c->xn;
            for (Py_ssize_t i = 0; i < k; i++) {
                const double *Wi = W + A[i] * p;
                for (Py_ssize_t m = 0; m < k; m++)
                    WAA[i * k + m] = Wi[A[m]];
                xn[i] = b[A[i]] - c->alpha * sgn[i];
            }
            memcpy(L, WAA, (size_t)k * k * sizeof(double));
            if (cholesky(L, k) != 0)
                return 2;
            cho_solve(L, k, xn);
            int same = 1;
            for (Py_ssize_t i = 0; i < k; i++)
                if (sign(xn[i]) != sgn[i]) {
                    same = 0;
                    break;
                }
            if (same) {
                memcpy(x, xn, (size_t)k * sizeof(double));
                break;
            }
            /* discrete line search on x -> xn: at each sign crossing (that coordinate set to 0) and at xn */
            Py_ssize_t nc = 0;
            for (Py_ssize_t i = 0; i < k; i++) {
                if (sign(xn[i]) != sgn[i] && x[i] != 0) {
                    double t = x[i] / (x[i] - xn[i]);
                    if (t > 0 && t < 1) {
                        c->cross[nc] = i;
                        c->ts[nc++] = t;
                    }
                }
            }
            double fbest = INFINITY;
            for (Py_ssize_t q = 0; q <= nc; q++) {
                double t = q < nc ? c->ts[q] : 1.0;
                for (Py_ssize_t i = 0; i < k; i++)
                    c->z[i] = x[i] + (xn[i] - x[i]) * t;
                if (q < nc)
                    c->z[c->cross[q]] = 0.0;
                double f = lasso_value(c, b, k, c->z);
                if (f < fbest) {
                    fbest = f;
                    memcpy(c->best, c->z, (size_t)k * sizeof(double));
                }
            }
            Py_ssize_t kk = 0;
            for (Py_ssize_t i = 0; i < k; i++) {
                if (c->best[i] != 0) {
                    A[kk] = A[i];
                    x[kk] = c->best[i];
                    sgn[kk] = sign(c->best[i]);
                    kk++;
                }
            }
            k = kk;
        }
        /* ---- check the zero coordinates ---- */
        memset(w, 0, (size_t)p * sizeof(double));
        accumulate(w, W, p, A, x, k);
        *kp = k;
        if (steps >= c->max_steps)
            return 1;
        for (Py_ssize_t i = 0; i < k; i++)
            c->in_A[A[i]] = 1;
        c->in_A[j] = 1;
        /* the max_add largest violations |w_m - b_m| > thr, kept sorted in ts/cross */
        Py_ssize_t nb = 0;
        for (Py_ssize_t m = 0; m < p; m++) {
            if (c->in_A[m])
                continue;
            double r = fabs(w[m] - b[m]);
            if (!(r > c->thr))
                continue;
            if (nb < c->max_add)
                nb++;
            else if (!(r > c->ts[nb - 1]))
                continue;
            Py_ssize_t pos = nb - 1;
            while (pos > 0 && c->ts[pos - 1] < r) {
                c->ts[pos] = c->ts[pos - 1];
                c->cross[pos] = c->cross[pos - 1];
                pos--;
            }
            c->ts[pos] = r;
            c->cross[pos] = m;
        }
        for (Py_ssize_t i = 0; i < k; i++)
            c->in_A[A[i]] = 0;
        c->in_A[j] = 0;
        if (nb == 0)
            return 0;
        for (Py_ssize_t q = 0; q < nb; q++) {
            Py_ssize_t m = c->cross[q];
            A[k] = m;
            x[k] = 0.0;
            sgn[k] = sign(b[m] - w[m]);
            k++;
        }
        steps++;
    }
}

static void *take(Py_buffer *buf, Py_ssize_t n, Py_ssize_t itemsize, const char *name)
{
    if (buf->len < n * itemsize) {
        PyErr_Format(PyExc_ValueError, "sweep: buffer '%s' holds %zd bytes, needs %zd", name, buf->len,
                     n * itemsize);
        return NULL;
    }
    return buf->buf;
}

/* 1 when ptr[0..p] rises from 0 to at most nnz, by at most p a row, and every ind[ptr[0]..ptr[p]) lies in
 * [0, p); else 0 with a ValueError naming fn. */
static int csr_ok(const int64_t *ptr, const int64_t *ind, Py_ssize_t p, Py_ssize_t nnz, const char *fn)
{
    int ok = ptr[0] == 0;
    for (Py_ssize_t i = 0; i < p && ok; i++)
        ok = ptr[i] <= ptr[i + 1] && ptr[i + 1] - ptr[i] <= p; /* a row of more than p entries repeats a column */
    ok = ok && ptr[p] <= nnz;
    for (int64_t q = 0; ok && q < ptr[p]; q++)
        ok = ind[q] >= 0 && ind[q] < p;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "%s: inconsistent sparse arrays (pointers or column indices)", fn);
    return ok;
}

/* sweep(W, S, diag, alpha, thr, max_steps, max_add, indptr_in, idx_in, val_in,
 *       indptr_out, idx_out, val_out, t22, j0, stop_on_fail)
 * -> (j_next, capped, failed, stopped, change) */
static PyObject *sweep(PyObject *self, PyObject *args)
{
    Py_buffer bW, bS, bd, bpi, bii, bvi, bpo, bio, bvo, bt;
    double alpha, thr;
    Py_ssize_t max_steps, max_add, j0;
    int stop_on_fail;
    if (!PyArg_ParseTuple(args, "w*y*y*ddnny*y*y*w*w*w*w*np", &bW, &bS, &bd, &alpha, &thr, &max_steps,
                          &max_add, &bpi, &bii, &bvi, &bpo, &bio, &bvo, &bt, &j0, &stop_on_fail))
        return NULL;
    static const char *const names[] = {"W", "S", "diag", "", "", "", "", "indptr_in", "idx_in", "val_in",
                                        "indptr_out", "idx_out", "val_out", "t22"};
    PyObject *result = NULL;
    Ctx c;
    memset(&c, 0, sizeof c);
    if (!dpm_check_args(args, "ddd----qqdqqdd", "sweep", names))
        goto done;
    Py_ssize_t p = bd.len / (Py_ssize_t)sizeof(double);
    c.p = p;
    c.alpha = alpha;
    c.thr = thr;
    c.max_steps = max_steps;
    c.max_add = max_add < 1 ? 1 : max_add;
    const int64_t *ptr_in, *idx_in;
    const double *val_in;
    int64_t *ptr_out, *idx_out;
    double *val_out, *t22;
    if (!(c.W = take(&bW, p * p, 8, "W")) || !(c.S = take(&bS, p * p, 8, "S")) || !(c.diag = bd.buf)
        || !(ptr_in = take(&bpi, p + 1, 8, "indptr_in")) || !(ptr_out = take(&bpo, p + 1, 8, "indptr_out"))
        || !(t22 = take(&bt, p, 8, "t22")))
        goto done;
    idx_in = bii.buf;
    val_in = bvi.buf;
    idx_out = bio.buf;
    val_out = bvo.buf;
    Py_ssize_t cap_out = bio.len / 8 < bvo.len / 8 ? bio.len / 8 : bvo.len / 8;
    if (j0 < 0 || j0 > p || ptr_out[j0] < 0 || ptr_out[j0] > cap_out) {
        PyErr_SetString(PyExc_ValueError, "sweep: inconsistent active-set arrays");
        goto done;
    }
    if (!csr_ok(ptr_in, idx_in, p, bii.len / 8 < bvi.len / 8 ? bii.len / 8 : bvi.len / 8, "sweep"))
        goto done;
    c.A = malloc((size_t)(p + 2) * sizeof(int64_t));
    c.cross = malloc((size_t)(p + 2) * sizeof(int64_t));
    c.in_A = calloc((size_t)p + 1, 1);
    double *blk = malloc((size_t)7 * (p + 2) * sizeof(double));
    if (!c.A || !c.cross || !c.in_A || !blk) {
        free(blk);
        PyErr_NoMemory();
        goto done;
    }
    c.x = blk;
    c.xn = blk + (p + 2);
    c.sgn = blk + 2 * (p + 2);
    c.w = blk + 3 * (p + 2);
    c.z = blk + 4 * (p + 2);
    c.best = blk + 5 * (p + 2);
    c.ts = blk + 6 * (p + 2);
    Py_ssize_t j = j0, capped = 0, failed = 0;
    double change = 0.0; /* the largest |W_ij| change of the sweep: when to check the gap */
    int stopped = 0, oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; j < p; j++) {
        Py_ssize_t nnz = ptr_out[j];
        if (cap_out - nnz < p)
            break; /* the caller grows the output and resumes at j */
        Py_ssize_t k = ptr_in[j + 1] - ptr_in[j];
        for (Py_ssize_t i = 0; i < k; i++) {
            c.A[i] = idx_in[ptr_in[j] + i];
            c.x[i] = val_in[ptr_in[j] + i];
        }
        int st = column_lasso(&c, j, &k);
        if (st < 0) {
            oom = 1;
            break;
        }
        if (st == 2) {
            failed++;
            if (stop_on_fail) {
                stopped = 1;
                break;
            }
            Py_ssize_t k0 = ptr_in[j + 1] - ptr_in[j]; /* keep the old coefficients */
            memcpy(idx_out + nnz, idx_in + ptr_in[j], (size_t)k0 * 8);
            memcpy(val_out + nnz, val_in + ptr_in[j], (size_t)k0 * 8);
            ptr_out[j + 1] = nnz + k0;
            continue;
        }
        capped += st == 1;
        double *w = c.w, *W = c.W;
        w[j] = c.diag[j];
        /* column j is read (for the change) where it is written: W is symmetric, so it is also row j's
         * old value, and the row is then one contiguous copy. A local maximum stays in a register. */
        double ch = 0.0;
        for (Py_ssize_t m = 0; m < p; m++) {
            double *cell = W + m * p + j, dw = fabs(w[m] - *cell);
            ch = dw > ch ? dw : ch;
            *cell = w[m];
        }
        change = ch > change ? ch : change;
        memcpy(W + j * p, w, (size_t)p * sizeof(double));
        double schur = c.diag[j];
        for (Py_ssize_t i = 0; i < k; i++) {
            idx_out[nnz + i] = c.A[i];
            val_out[nnz + i] = c.x[i];
            schur -= w[c.A[i]] * c.x[i];
        }
        ptr_out[j + 1] = nnz + k;
        if (!(schur > 1e-14 * c.diag[j])) {
            failed++;
            if (stop_on_fail) {
                stopped = 1;
                j++;
                break;
            }
            schur = schur > 1e-300 ? schur : 1e-300;
        }
        t22[j] = 1.0 / schur;
    }
    Py_END_ALLOW_THREADS
    free(blk);
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("nnnid", j, capped, failed, stopped, change);
done:
    free(c.A);
    free(c.cross);
    free(c.in_A);
    free(c.WAA);
    free(c.L);
    PyBuffer_Release(&bW);
    PyBuffer_Release(&bS);
    PyBuffer_Release(&bd);
    PyBuffer_Release(&bpi);
    PyBuffer_Release(&bii);
    PyBuffer_Release(&bvi);
    PyBuffer_Release(&bpo);
    PyBuffer_Release(&bio);
    PyBuffer_Release(&bvo);
    PyBuffer_Release(&bt);
    return result;
}

/* residual(W, indptr, indices, data) -> (tr(TW), ||TW - I||_F^2) for a CSR T and a dense W.
 * Row i of TW combines the rows of W that row i of T names (contiguous axpys), one row at a time:
 * cost nnz(T) p, memory p. */
static PyObject *residual(PyObject *self, PyObject *args)
{
    Py_buffer bW, bp, bi, bv;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &bW, &bp, &bi, &bv))
        return NULL;
    static const char *const names[] = {"W", "indptr", "indices", "data"};
    PyObject *result = NULL;
    if (!dpm_check_args(args, "dqqd", "residual", names))
        goto done;
    Py_ssize_t p = bp.len / 8 - 1;
    const int64_t *ptr = bp.buf, *ind = bi.buf;
    const double *W = bW.buf, *val = bv.buf;
    if (p < 0 || bW.len < p * p * 8) {
        PyErr_SetString(PyExc_ValueError, "residual: inconsistent arrays");
        goto done;
    }
    if (!csr_ok(ptr, ind, p, bi.len / 8 < bv.len / 8 ? bi.len / 8 : bv.len / 8, "residual"))
        goto done;
    double *R = malloc((size_t)(p + 1) * sizeof(double));
    if (!R) {
        PyErr_NoMemory();
        goto done;
    }
    double tr = 0.0, fro = 0.0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < p; i++) {
        memset(R, 0, (size_t)p * sizeof(double));
        accumulate(R, W, p, ind + ptr[i], val + ptr[i], (Py_ssize_t)(ptr[i + 1] - ptr[i]));
        tr += R[i];
        R[i] -= 1.0;
        double f = 0.0;
        for (Py_ssize_t m = 0; m < p; m++)
            f += R[m] * R[m];
        fro += f;
    }
    Py_END_ALLOW_THREADS
    free(R);
    result = Py_BuildValue("dd", tr, fro);
done:
    PyBuffer_Release(&bW);
    PyBuffer_Release(&bp);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bv);
    return result;
}

/* extrapolate(out, W1, W0, S, r, alpha): out = S + clip(W1 + r (W1 - W0) - S, -alpha, alpha), elementwise.
 * The path's dual start for the next penalty, in one pass over four p x p arrays (NumPy needs five). */
static PyObject *extrapolate(PyObject *self, PyObject *args)
{
    Py_buffer bo, b1, b0, bs;
    double r, alpha;
    if (!PyArg_ParseTuple(args, "w*y*y*y*dd", &bo, &b1, &b0, &bs, &r, &alpha))
        return NULL;
    static const char *const names[] = {"out", "W1", "W0", "S"};
    PyObject *result = NULL;
    if (!dpm_check_args(args, "dddd", "extrapolate", names))
        goto done;
    Py_ssize_t n = bo.len / 8;
    if (b1.len / 8 != n || b0.len / 8 != n || bs.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "extrapolate: buffers of different sizes");
        goto done;
    }
    double *o = bo.buf;
    const double *w1 = b1.buf, *w0 = b0.buf, *s = bs.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double d = w1[i] + r * (w1[i] - w0[i]) - s[i];
        d = d > alpha ? alpha : (d < -alpha ? -alpha : d);
        o[i] = s[i] + d;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&bo);
    PyBuffer_Release(&b1);
    PyBuffer_Release(&b0);
    PyBuffer_Release(&bs);
    return result;
}

static PyMethodDef methods[] = {
    {"residual", residual, METH_VARARGS, "tr(TW) and ||TW - I||_F^2 for a CSR T and a dense W."},
    {"sweep", sweep, METH_VARARGS, "One sweep of exact column lassos over a graphical-lasso block (in place)."},
    {"extrapolate", extrapolate, METH_VARARGS, "S + clip(W1 + r (W1 - W0) - S, -alpha, alpha) into out."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_glasso_sweep",
                                    "Compiled inner loop of dpmoments.solvers.glasso_bcd.", -1, methods};

PyMODINIT_FUNC PyInit__glasso_sweep(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ABI", DPM_GLASSO_SWEEP_ABI) < 0)
        Py_CLEAR(m);
    return m;
}
