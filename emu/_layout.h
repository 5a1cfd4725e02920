/*
 * Struct layouts declared once, as field lists, for C and Python alike.
 *
 * A struct that C and Python both read (the block hook's bh_state, the
 * slice's time base and the loop watch's cells the MMIO callbacks write)
 * is declared here as an X-macro list of its fields:
 *
 *     #define SYNC_CELLS_FIELDS(F) \
 *         F(int64_t, base_ticks, 0, 'i', "the slice's start, in ticks") \
 *         F(uint32_t, in_slice, 0, 'u', "1 inside emu_start's slice")
 *     typedef struct { SYNC_CELLS_FIELDS(LAYOUT_DECL) } SyncCells;
 *
 * (type, name, count: 0 a scalar or 8/32 an array, kind: 'u' unsigned,
 * 'i' signed, 'p' a pointer, 'o' a PyObject *, 'S' a struct of its own,
 * doc).  C gets its struct from the list; the module that owns the struct
 * exports the same list with the compiler's offsets and sizes
 * (LAYOUT_INFO, layout_export), and Python builds its ctypes view from
 * that export at import (emu/native.py, ``ctypes_struct``): no offset is
 * written twice, and nothing is to be kept in step by hand.
 */
#ifndef EMU_LAYOUT_H
#define EMU_LAYOUT_H

#include "_pyhelp.h"
#include <stddef.h>

#define LAYOUT_DIM_0
#define LAYOUT_DIM_8 [8]
#define LAYOUT_DIM_16 [16]
#define LAYOUT_DIM_32 [32]
#define LAYOUT_DECL(type, name, n, kind, doc) type name LAYOUT_DIM_##n;

typedef struct {
    const char *name;
    Py_ssize_t offset, size;      /* size of one element */
    char kind;
    int count;                    /* 0: a scalar */
} LayoutField;

/* LAYOUT_INFO needs LAYOUT_STRUCT defined as the struct's type name */
#define LAYOUT_INFO(type, name, n, kind, doc) \
    {#name, (Py_ssize_t)offsetof(LAYOUT_STRUCT, name), (Py_ssize_t)sizeof(type), kind, n},

/* (size, [(name, offset, size, kind, count), ...]) for Python */
static inline PyObject *layout_export(const LayoutField *f, int n, Py_ssize_t total) {
    PyObject *l = PyList_New(n);
    if (l == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(snnCi)", f[i].name, f[i].offset, f[i].size,
                                    (int)f[i].kind, f[i].count);
        if (t == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return Py_BuildValue("(nN)", total, l);
}

#endif
