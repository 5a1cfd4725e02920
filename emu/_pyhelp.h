/*
 * Small helpers every native module of the emulator shares (header only:
 * each module compiles its own copy of the same source).
 *
 *   - integer attributes read and written through the C API (attr_ll,
 *     set_ll, truthy_attr, get_u32);
 *   - a file's interned attribute names, declared once as a list:
 *
 *         #define MY_NAMES(X) X(str_now, "now") X(str_seq, "_seq")
 *         MY_NAMES(NAME_DECL)
 *         int my_intern(void) { MY_NAMES(NAME_INTERN) return 0; }
 *
 *     (interned once at import, never changed after: no state of a machine
 *     lives in a native module's globals; two machines in one process share
 *     nothing but these constant strings).
 *
 * The modules do not link against libunicorn: Python passes the addresses
 * of the engine's functions.  Names here are static; a module's files share
 * their own functions through the module's header (hidden visibility: one
 * module's symbols never meet another's).
 */
#ifndef EMU_PYHELP_H
#define EMU_PYHELP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define NAME_DECL(var, text) static PyObject *var;
#define NAME_INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
#define NAME_INTERN_NULL(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;

#if defined(__GNUC__)
#define EMU_INTERNAL __attribute__((visibility("hidden")))
#define EMU_EXPORT __attribute__((visibility("default")))   /* called through ctypes */
#else
#define EMU_INTERNAL
#define EMU_EXPORT
#endif

static inline int attr_ll(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static inline int set_ll(PyObject *o, PyObject *name, long long v) {
    PyObject *n = PyLong_FromLongLong(v);
    if (n == NULL)
        return -1;
    int err = PyObject_SetAttr(o, name, n);
    Py_DECREF(n);
    return err;
}

static inline int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

static inline int get_u32(PyObject *o, PyObject *name, uint32_t *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = (uint32_t)PyLong_AsUnsignedLongMask(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* obj.<name>[key] with obj.<name> a dict: 0 with *dict (a new reference) and
 * *val (borrowed from it) set, or -1 with an exception */
static inline int dict_attr_get(PyObject *obj, PyObject *name, PyObject *key, PyObject **dict,
                         PyObject **val) {
    *dict = PyObject_GetAttr(obj, name);
    if (*dict == NULL)
        return -1;
    if (!PyDict_Check(*dict)) {
        PyErr_SetString(PyExc_TypeError, "register storage is not a dict");
        Py_CLEAR(*dict);
        return -1;
    }
    *val = PyDict_GetItemWithError(*dict, key);   /* borrowed */
    if (*val == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        Py_CLEAR(*dict);
        return -1;
    }
    return 0;
}

/* A type another native module defines, found at import (its module
 * imported, the attribute taken): 0, or -1 with an ImportError set. */
static inline int import_type(const char *module, const char *name, PyTypeObject **out) {
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL)
        return -1;
    PyObject *t = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    if (t == NULL)
        return -1;
    if (!PyType_Check(t)) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ImportError, "%s.%s is not a type", module, name);
        return -1;
    }
    *out = (PyTypeObject *)t;      /* kept: the module holds its types for good */
    return 0;
}

/* Register a module's types and add them to it; 0 or -1. */
static inline int add_types(PyObject *m, PyTypeObject **types, const char **names, int n) {
    for (int i = 0; i < n; i++) {
        if (PyType_Ready(types[i]) < 0)
            return -1;
        Py_INCREF(types[i]);
        if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0) {
            Py_DECREF(types[i]);
            return -1;
        }
    }
    return 0;
}

#endif
