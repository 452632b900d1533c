/* patcher.text._scan: validate-and-skip a JSON value, and validate UTF-8, in C.
 *
 * The optional native half of patcher/text/jsontext.py. It builds no Python objects and holds no
 * copy of the bytes: value_end() walks one value of strict JSON (RFC 8259) and returns where it
 * ends, utf8_valid() says whether a buffer is well-formed UTF-8 (Unicode Table 3-7, as Python's
 * strict decoder). Either answers "no" (-1, False) for anything it does not accept, and the
 * pure-Python path, which stays the reference, then decides and names the problem; so the two
 * paths accept and refuse the same documents with the same messages. Built against the stable
 * ABI (Python 3.11+), one wheel per platform.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Deeper documents are left to the pure-Python path (which refuses past its own limit). */
#define MAX_DEPTH 512

static inline int is_ws(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static inline int is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline Py_ssize_t skip_ws(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && is_ws(s[i])) i++;
    return i;
}

/* s[i] is '"'; the offset after the closing quote, or -1. */
static Py_ssize_t skip_string(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) {
    i++;
    for (;;) {
        while (i < n && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20) i++;
        if (i >= n || s[i] < 0x20) return -1;
        if (s[i] == '"') return i + 1;
        i++; /* a backslash */
        if (i >= n) return -1;
        switch (s[i]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                i++;
                break;
            case 'u':
                if (i + 4 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) || !is_hex(s[i + 3]) ||
                    !is_hex(s[i + 4]))
                    return -1;
                i += 5;
                break;
            default:
                return -1;
        }
    }
}

/* The longest number at s[i] (a fraction or exponent without digits is not part of it). */
static Py_ssize_t skip_number(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) {
    if (i < n && s[i] == '-') i++;
    if (i >= n) return -1;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && is_digit(s[i])) i++;
    } else {
        return -1;
    }
    if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
        i += 2;
        while (i < n && is_digit(s[i])) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        Py_ssize_t k = i + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < n && is_digit(s[k])) {
            while (k < n && is_digit(s[k])) k++;
            i = k;
        }
    }
    return i;
}

static Py_ssize_t skip_literal(const unsigned char *s, Py_ssize_t i, Py_ssize_t n,
                               const char *word, Py_ssize_t size) {
    return (n - i >= size && memcmp(s + i, word, (size_t)size) == 0) ? i + size : -1;
}

/* Where the value starting exactly at s[i] ends, or -1. Iterative: the open containers are a
 * stack of their closing brackets. */
static Py_ssize_t value_end(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) {
    unsigned char open[MAX_DEPTH];
    int depth = 0;

value:
    if (i >= n) return -1;
    switch (s[i]) {
        case '{':
        case '[':
            if (depth == MAX_DEPTH) return -1;
            open[depth++] = s[i] == '{' ? '}' : ']';
            i = skip_ws(s, i + 1, n);
            if (i < n && s[i] == open[depth - 1]) {
                i++;
                depth--;
                goto after_value;
            }
            if (open[depth - 1] == '}') goto member;
            goto value;
        case '"':
            i = skip_string(s, i, n);
            break;
        case 't':
            i = skip_literal(s, i, n, "true", 4);
            break;
        case 'f':
            i = skip_literal(s, i, n, "false", 5);
            break;
        case 'n':
            i = skip_literal(s, i, n, "null", 4);
            break;
        default:
            i = skip_number(s, i, n);
    }
    if (i < 0) return -1;

after_value:
    if (depth == 0) return i;
    i = skip_ws(s, i, n);
    if (i >= n) return -1;
    if (s[i] == ',') {
        i = skip_ws(s, i + 1, n);
        if (open[depth - 1] == ']') goto value;
        goto member;
    }
    if (s[i] != open[depth - 1]) return -1;
    i++;
    depth--;
    goto after_value;

member:
    if (i >= n || s[i] != '"') return -1;
    i = skip_string(s, i, n);
    if (i < 0) return -1;
    i = skip_ws(s, i, n);
    if (i >= n || s[i] != ':') return -1;
    i = skip_ws(s, i + 1, n);
    goto value;
}

static inline int cont(unsigned char c) { return (c & 0xC0) == 0x80; }

static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        while (n - i >= 8) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (word & UINT64_C(0x8080808080808080)) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (n - i < 2 || !cont(s[i + 1])) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (n - i < 3 || s[i + 1] < lo || s[i + 1] > hi || !cont(s[i + 2])) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (n - i < 4 || s[i + 1] < lo || s[i + 1] > hi || !cont(s[i + 2]) ||
                !cont(s[i + 3]))
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static PyObject *py_value_end(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*n:value_end", &view, &start)) return NULL;
    if (start >= 0 && start <= view.len) {
        Py_BEGIN_ALLOW_THREADS
        end = value_end((const unsigned char *)view.buf, start, view.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(end);
}

static PyObject *py_utf8_valid(PyObject *self, PyObject *args) {
    Py_buffer view;
    int valid;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*:utf8_valid", &view)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    valid = utf8_valid((const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(valid);
}

static PyMethodDef methods[] = {
    {"value_end", py_value_end, METH_VARARGS,
     "value_end(data, start) -> int\n\nWhere the strict JSON value starting at data[start] "
     "ends, validated on the way; -1 if it is not one (or nests deeper than 512)."},
    {"utf8_valid", py_utf8_valid, METH_VARARGS,
     "utf8_valid(data) -> bool\n\nWhether data is well-formed UTF-8."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "patcher.text._scan",
    "Validate-and-skip a JSON value, and validate UTF-8, in C (see patcher.text.jsontext).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
