/*
 * PageMap: the engine's TLB filled from the memory map (UC_TLB_VIRTUAL).
 *
 * With Unicorn's own (CPU) TLB, QEMU's Cortex-M default memory map makes
 * every RAM page executable in the TLB, and QEMU then never marks a RAM
 * page's TLB entry dirty (the entry also serves fetches: stores must look
 * for translated code to invalidate), so every store into RAM leaves the
 * translated code for a helper (two memory-map lookups and a search for
 * translated code on the page): measured the largest single cost of
 * CPU-bound firmware.  This hook fills the TLB instead: RAM pages read and
 * write, executable only from the first fetch there on (the page is marked
 * in ``exec``; a page once executed stays executable, so stores into it
 * still find its translated code); flash and the rest of the code space
 * read/write/execute (the memory's own protections and hooks decide as
 * before: they are checked past the TLB); the execute-never regions of the
 * default map (peripherals 0x40000000-0x5FFFFFFF, device and system space
 * from 0xA0000000) read/write: a fetch there is refused (the engine stops
 * with UC_ERR_EXCEPTION; ``denied`` holds the address, the CPU raises the
 * MemManage fault QEMU's own TLB raised).  A fill from a data access in
 * translated code follows Unicorn's sync of the CPU state to the accessing
 * instruction, IT bits included: they go back to zero as after a store
 * hook (FlashGuard).
 *
 * With the MPU on, the RAM pages every region covering them makes
 * execute-never (Zephyr's SRAM) are refused to fetches here too
 * (``set_xn``, from emu/cpu/mpu.py): the default map's fault, without a
 * protection hook on the page (a memory hook over a page keeps Unicorn's
 * TLB entry for it "not dirty": every store there takes the slow path).
 */
#include "_core.h"
typedef struct {
    uint64_t paddr;
    uint32_t perms;
} uc_tlb_entry_t;

typedef struct {
    PyObject_HEAD
    uint64_t ram_base, ram_size;    /* one RAM range */
    unsigned char *exec;            /* one byte a 1 KiB page of RAM */
    unsigned char *xn;              /* one byte a RAM page: the MPU refuses fetches there */
    int any_xn;
    unsigned long long fills, exec_pages;
    uint64_t denied;                /* the last fetch refused, + 1 (0: none) */
    uc_reg_fn reg_write;
    int epsr_id;
    int (*ctl)(void *uc, uint32_t control, ...);
#ifdef EMU_TEST_FAULTS
    int sticky_exec;    /* a test build's fault: 0, a data fill of an executed page leaves
                         * execute out */
#endif
} PageMap;

static int pagemap_fill(void *uc, uint64_t vaddr, int type, uc_tlb_entry_t *e, void *user_data) {
    PageMap *m = (PageMap *)user_data;
    uint32_t page = (uint32_t)vaddr & ~0x3FFu;
    m->fills++;
    e->paddr = page;
    if ((uint64_t)page - m->ram_base < m->ram_size) {
        uint64_t i = ((uint64_t)page - m->ram_base) >> 10;
        if (m->any_xn && m->xn[i]) {            /* the MPU: execute-never */
            e->perms = 3;
            if (type == 18)
                m->denied = (uint64_t)vaddr + 1;
            goto data;
        }
        if (type == 18 /* UC_MEM_FETCH */ && !m->exec[i]) {
            m->exec[i] = 1;
            m->exec_pages++;
            /* entries made for this page before (read/write, dirty: stores
             * that do not look for translated code) go, in every MMU index */
            if (m->ctl != NULL)
                m->ctl(uc, 11 | (1u << 30) /* UC_CTL_WRITE(UC_CTL_TLB_FLUSH, 0) */);
        }
        e->perms = m->exec[i] && (!FAULT(!m->sticky_exec) || type == 18) ? 7 : 3;
    } else if ((page >= 0x40000000u && page < 0x60000000u)
               || (page >= 0xA0000000u && page < 0xFFFFF000u)) {
        e->perms = 3;
        if (type == 18)
            m->denied = (uint64_t)vaddr + 1;
    } else {
        e->perms = 7;
    }
data:
    if (type != 18 && m->reg_write != NULL) {
        uint64_t t = 1u << 24;                          /* EPSR: T, IT = 0 */
        m->reg_write(uc, m->epsr_id, &t);
    }
    return 1;
}

static PyObject *PageMap_install(PageMap *m, PyObject *args) {
    unsigned long long fn, uch, type, reg_write, base, size, ctl;
    int epsr_id;
    if (!PyArg_ParseTuple(args, "KKKKiKKK", &fn, &uch, &type, &reg_write, &epsr_id, &base, &size,
                          &ctl))
        return NULL;
    m->ctl = (int (*)(void *, uint32_t, ...))(uintptr_t)ctl;
#ifdef EMU_TEST_FAULTS
    m->sticky_exec = 1;
#endif
    if (m->exec == NULL) {
        m->exec = PyMem_Calloc((size_t)(size >> 10) + 1, 1);
        m->xn = PyMem_Calloc((size_t)(size >> 10) + 1, 1);
        if (m->exec == NULL || m->xn == NULL)
            return PyErr_NoMemory();
    }
    m->ram_base = base;
    m->ram_size = size;
    m->reg_write = (uc_reg_fn)(uintptr_t)reg_write;
    m->epsr_id = epsr_id;
    size_t hh = 0;
    int err = ((uc_hook_add_fn)(uintptr_t)fn)((void *)(uintptr_t)uch, &hh, (int)type,
                                              (void *)pagemap_fill, m, (uint64_t)1, (uint64_t)0);
    return PyLong_FromLong(err);
}

static PyObject *PageMap_take_denied(PageMap *m, PyObject *noargs) {
    uint64_t d = m->denied;
    m->denied = 0;
    if (!d)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(d - 1);
}

/* set_xn(table or None) -> True if it changed (the caller then flushes the
 * TLB): a byte a RAM page, non-zero where the MPU refuses fetches */
static PyObject *PageMap_set_xn(PageMap *m, PyObject *arg) {
    size_t n = m->xn == NULL ? 0 : (size_t)(m->ram_size >> 10);
    int changed = 0, any = 0;
    if (arg == Py_None) {
        for (size_t i = 0; i < n; i++) {
            changed |= m->xn[i] != 0;
            m->xn[i] = 0;
        }
    } else {
        Py_buffer b;
        if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
            return NULL;
        if ((size_t)b.len != n) {
            PyBuffer_Release(&b);
            return PyErr_Format(PyExc_ValueError, "set_xn: %zu bytes for %zu pages",
                                (size_t)b.len, n);
        }
        const unsigned char *t = b.buf;
        for (size_t i = 0; i < n; i++) {
            unsigned char v = t[i] != 0;
            changed |= m->xn[i] != v;
            m->xn[i] = v;
            any |= v;
        }
        PyBuffer_Release(&b);
    }
    m->any_xn = any;
    return PyBool_FromLong(changed);
}

static void PageMap_dealloc(PageMap *m) {
    PyMem_Free(m->xn);
    PyMem_Free(m->exec);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyMethodDef PageMap_methods[] = {
    {"install", (PyCFunction)PageMap_install, METH_VARARGS,
     "install(uc_hook_add_address, uc_handle, UC_HOOK_TLB_FILL, uc_reg_write_address, "
     "UC_ARM_REG_EPSR, ram_base, ram_size) -> uc_err (keep the map alive as long as the engine)"},
    {"set_xn", (PyCFunction)PageMap_set_xn, METH_O,
     "set_xn(table or None) -> changed: the RAM pages (a byte each) the MPU makes "
     "execute-never; flush the TLB when it changed"},
    {"take_denied", (PyCFunction)PageMap_take_denied, METH_NOARGS,
     "take_denied() -> the address of the last fetch refused since the last call, or None"},
    {NULL}
};

static PyMemberDef PageMap_members[] = {
    {"fills", T_ULONGLONG, offsetof(PageMap, fills), READONLY, "TLB fills so far"},
    {"exec_pages", T_ULONGLONG, offsetof(PageMap, exec_pages), READONLY,
     "RAM pages code has been fetched from"},
#ifdef EMU_TEST_FAULTS
    {"sticky_exec", T_INT, offsetof(PageMap, sticky_exec), 0,
     "1: an executed RAM page stays executable in every fill (0: for the companion test)"},
#endif
    {NULL}
};

PyTypeObject PageMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.cpu._core.PageMap",
    .tp_doc = "Fills the engine's TLB from the memory map (see _mmio.c).",
    .tp_basicsize = sizeof(PageMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)PageMap_dealloc,
    .tp_methods = PageMap_methods,
    .tp_members = PageMap_members,
};

/* map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err */
