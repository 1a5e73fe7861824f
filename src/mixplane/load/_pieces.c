/* Copying document pieces into packed sequences, outside the interpreter lock.
 *
 * A block of sequences is made of ~4 pieces per sequence, each a run of tokens from a
 * memory-mapped shard. Done from Python every piece costs an array view and a copy call
 * (about a microsecond each); here a whole block is one call, and the copies (and the page
 * faults they take on mapped shards) run without the GIL, so a reading thread overlaps
 * with the training loop.
 *
 *   copy_pieces(out, sources, shard, first, take, target)
 *       out[target[i] : target[i] + take[i]] = sources[shard[i]][first[i] : first[i] + take[i]]
 *   number_pieces(out, target, count, start, step)
 *       out[target[i] + k] = start[i] + k * step   for k < count[i]
 *
 * Index arguments are contiguous int64 arrays of one length. Tokens are unsigned integers
 * of 1, 2, 4 or 8 bytes; a source may be narrower than `out` (zero-extended) but not wider.
 * Every index is checked before anything is written.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_buffer view;
    int held;
} Buffer;

static void release(Buffer *buffers, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) {
        if (buffers[i].held) {
            PyBuffer_Release(&buffers[i].view);
            buffers[i].held = 0;
        }
    }
}

static int is_int64(const Py_buffer *view) {
    const char *format = view->format ? view->format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
    return view->itemsize == 8 && (strcmp(format, "q") == 0 || strcmp(format, "l") == 0);
}

/* An int64 index array of `length` items (length < 0: take its length). */
static int index_buffer(PyObject *object, const char *name, Buffer *out, Py_ssize_t *length) {
    if (PyObject_GetBuffer(object, &out->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    out->held = 1;
    if (!is_int64(&out->view)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous int64 array", name);
        return -1;
    }
    Py_ssize_t items = out->view.len / 8;
    if (*length < 0) {
        *length = items;
    } else if (items != *length) {
        PyErr_Format(PyExc_ValueError, "%s has %zd items, expected %zd", name, items, *length);
        return -1;
    }
    return 0;
}

static int token_size_ok(Py_ssize_t size) {
    return size == 1 || size == 2 || size == 4 || size == 8;
}

/* The writable, contiguous output array of integers. */
static int out_buffer(PyObject *object, Buffer *out) {
    if (PyObject_GetBuffer(object, &out->view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return -1;
    out->held = 1;
    if (!token_size_ok(out->view.itemsize)) {
        PyErr_SetString(PyExc_TypeError, "out must hold integers of 1, 2, 4 or 8 bytes");
        return -1;
    }
    return 0;
}

static uint64_t load(const char *at, Py_ssize_t size) {
    switch (size) {
        case 1: return *(const uint8_t *)at;
        case 2: return *(const uint16_t *)at;
        case 4: return *(const uint32_t *)at;
        default: return *(const uint64_t *)at;
    }
}

static void store(char *at, Py_ssize_t size, uint64_t value) {
    switch (size) {
        case 1: *(uint8_t *)at = (uint8_t)value; break;
        case 2: *(uint16_t *)at = (uint16_t)value; break;
        case 4: *(uint32_t *)at = (uint32_t)value; break;
        default: *(uint64_t *)at = value; break;
    }
}

/* Copy `count` tokens, widening them when the sizes differ. */
static void copy_run(char *to, Py_ssize_t to_size, const char *from, Py_ssize_t from_size,
                     int64_t count) {
    if (to_size == from_size) {
        memcpy(to, from, (size_t)(count * to_size));
    } else if (from_size == 2 && to_size == 8) {
        const uint16_t *in = (const uint16_t *)from;
        int64_t *o = (int64_t *)to;
        for (int64_t k = 0; k < count; k++) o[k] = in[k];
    } else if (from_size == 2 && to_size == 4) {
        const uint16_t *in = (const uint16_t *)from;
        uint32_t *o = (uint32_t *)to;
        for (int64_t k = 0; k < count; k++) o[k] = in[k];
    } else if (from_size == 4 && to_size == 8) {
        const uint32_t *in = (const uint32_t *)from;
        int64_t *o = (int64_t *)to;
        for (int64_t k = 0; k < count; k++) o[k] = in[k];
    } else {
        for (int64_t k = 0; k < count; k++)
            store(to + k * to_size, to_size, load(from + k * from_size, from_size));
    }
}

static PyObject *copy_pieces(PyObject *self, PyObject *args) {
    PyObject *out_object, *sources, *shard_object, *first_object, *take_object, *target_object;
    if (!PyArg_ParseTuple(args, "OOOOOO", &out_object, &sources, &shard_object, &first_object,
                          &take_object, &target_object))
        return NULL;
    if (!PyList_Check(sources) && !PyTuple_Check(sources)) {
        PyErr_SetString(PyExc_TypeError, "sources must be a list or tuple of token arrays");
        return NULL;
    }
    Py_ssize_t n_sources = PySequence_Fast_GET_SIZE(sources);
    (void)self;
    Buffer out, index[4];
    memset(&out, 0, sizeof out);
    memset(index, 0, sizeof index);
    Buffer *source = PyMem_Calloc(n_sources ? n_sources : 1, sizeof(Buffer));
    if (source == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    Py_ssize_t n = -1;

    if (out_buffer(out_object, &out) < 0) goto done;
    if (index_buffer(shard_object, "shard", &index[0], &n) < 0 ||
        index_buffer(first_object, "first", &index[1], &n) < 0 ||
        index_buffer(take_object, "take", &index[2], &n) < 0 ||
        index_buffer(target_object, "target", &index[3], &n) < 0)
        goto done;
    const int64_t *shard = index[0].view.buf, *first = index[1].view.buf;
    const int64_t *take = index[2].view.buf, *target = index[3].view.buf;
    Py_ssize_t out_size = out.view.itemsize, out_items = out.view.len / out_size;

    /* Open the sources used and check every piece before writing anything. */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = shard[i];
        if (s < 0 || s >= n_sources) {
            PyErr_Format(PyExc_IndexError, "piece %zd: shard %lld of %zd", i, (long long)s,
                         n_sources);
            goto done;
        }
        Buffer *from = &source[s];
        if (!from->held) {
            PyObject *item = PySequence_Fast_GET_ITEM(sources, s);
            if (PyObject_GetBuffer(item, &from->view, PyBUF_C_CONTIGUOUS) < 0) goto done;
            from->held = 1;
            if (!token_size_ok(from->view.itemsize) || from->view.itemsize > out_size) {
                PyErr_Format(PyExc_TypeError,
                             "source %lld holds %zd-byte tokens, out holds %zd-byte ones "
                             "(tokens may be widened, not narrowed)",
                             (long long)s, from->view.itemsize, out_size);
                goto done;
            }
        }
        Py_ssize_t from_items = from->view.len / from->view.itemsize;
        if (take[i] < 0 || first[i] < 0 || first[i] > from_items - take[i] || target[i] < 0 ||
            target[i] > out_items - take[i]) {
            PyErr_Format(PyExc_IndexError,
                         "piece %zd: tokens [%lld, %lld) of source %lld (%zd tokens) to "
                         "[%lld, %lld) of out (%zd)",
                         i, (long long)first[i], (long long)(first[i] + take[i]), (long long)s,
                         from_items, (long long)target[i], (long long)(target[i] + take[i]),
                         out_items);
            goto done;
        }
    }

    Py_BEGIN_ALLOW_THREADS
    char *to = out.view.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Buffer *from = &source[shard[i]];
        Py_ssize_t size = from->view.itemsize;
        copy_run(to + target[i] * out_size, out_size, (const char *)from->view.buf + first[i] * size,
                 size, take[i]);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);

done:
    release(&out, 1);
    release(index, 4);
    release(source, n_sources);
    PyMem_Free(source);
    return result;
}

static PyObject *number_pieces(PyObject *self, PyObject *args) {
    PyObject *out_object, *target_object, *count_object, *start_object;
    long long step;
    if (!PyArg_ParseTuple(args, "OOOOL", &out_object, &target_object, &count_object,
                          &start_object, &step))
        return NULL;
    (void)self;
    Buffer out, index[3];
    memset(&out, 0, sizeof out);
    memset(index, 0, sizeof index);
    PyObject *result = NULL;
    Py_ssize_t n = -1;
    if (out_buffer(out_object, &out) < 0) goto done;
    if (index_buffer(target_object, "target", &index[0], &n) < 0 ||
        index_buffer(count_object, "count", &index[1], &n) < 0 ||
        index_buffer(start_object, "start", &index[2], &n) < 0)
        goto done;
    const int64_t *target = index[0].view.buf, *count = index[1].view.buf;
    const int64_t *start = index[2].view.buf;
    Py_ssize_t size = out.view.itemsize, out_items = out.view.len / size;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (count[i] < 0 || target[i] < 0 || target[i] > out_items - count[i]) {
            PyErr_Format(PyExc_IndexError, "piece %zd: [%lld, %lld) of out (%zd)", i,
                         (long long)target[i], (long long)(target[i] + count[i]), out_items);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    char *to = out.view.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        char *at = to + target[i] * size;
        int64_t value = start[i];
        if (size == 4) {
            int32_t *o = (int32_t *)at;
            for (int64_t k = 0; k < count[i]; k++, value += step) o[k] = (int32_t)value;
        } else {
            for (int64_t k = 0; k < count[i]; k++, value += step)
                store(at + k * size, size, (uint64_t)value);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);

done:
    release(&out, 1);
    release(index, 3);
    return result;
}

static PyMethodDef methods[] = {
    {"copy_pieces", copy_pieces, METH_VARARGS,
     "copy_pieces(out, sources, shard, first, take, target)\n\n"
     "out[target[i]:target[i]+take[i]] = sources[shard[i]][first[i]:first[i]+take[i]] for "
     "every i, without the GIL."},
    {"number_pieces", number_pieces, METH_VARARGS,
     "number_pieces(out, target, count, start, step)\n\n"
     "out[target[i]+k] = start[i] + k*step for k < count[i], without the GIL."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pieces", "Copying document pieces into packed sequences.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pieces(void) { return PyModule_Create(&module); }
