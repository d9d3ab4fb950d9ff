/* Argument checks shared by the compiled extensions (moments/_clip.c, moments/_binned.c,
 * solvers/_glasso_sweep.c), run once per call before any loop reads a buffer.
 *
 * The loops read their arrays through the buffer protocol as flat runs of bytes ("y*"/"w*" in
 * PyArg_ParseTuple: C-contiguous or refused); these checks add what the byte count cannot say:
 * that argument i holds 8-byte items of the expected kind (float64 'd' or int64 'q'/'l'), so a float32
 * or int32 array is a TypeError instead of a loop that reads half of its values past their end.
 */
#ifndef DPMOMENTS_BUFFER_CHECKS_H
#define DPMOMENTS_BUFFER_CHECKS_H
#include <Python.h>
#include <string.h>

/* 1 when args[i] is a C-contiguous buffer of 8-byte float64 (kind 'd') or int64 (kind 'q') items; else 0
 * with a TypeError naming the function and the argument. */
static int dpm_check_items(PyObject *args, Py_ssize_t i, char kind, const char *fn, const char *name)
{
    Py_buffer b;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, i), &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: '%s' must be a C-contiguous array", fn, name);
        return 0;
    }
    const char *f = b.format ? b.format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    int ok = b.itemsize == 8 && strlen(f) == 1
             && (kind == 'd' ? *f == 'd' : (*f == 'q' || *f == 'l'));
    PyBuffer_Release(&b);
    if (!ok)
        PyErr_Format(PyExc_TypeError, "%s: '%s' must hold %s", fn, name, kind == 'd' ? "float64" : "int64");
    return ok;
}

/* dpm_check_items for every argument named in kinds: kinds[i] is 'd', 'q', or '-' (not a buffer). */
static int dpm_check_args(PyObject *args, const char *kinds, const char *fn, const char *const *names)
{
    for (Py_ssize_t i = 0; kinds[i]; i++)
        if (kinds[i] != '-' && !dpm_check_items(args, i, kinds[i], fn, names[i]))
            return 0;
    return 1;
}
#endif
