/*
 * emu.cpu._core: the module (see _core.h): its interned names, its types
 * (Regs, ExcHook, FlashGuard, PageMap), and the C clock's types found.
 */
#include "_core.h"

CLOCK_TYPES_DEFINE

#define CORE_NAME_DEF(var, text) PyObject *var;
CORE_NAMES(CORE_NAME_DEF)

int core_intern(void) {
    CORE_NAMES(NAME_INTERN)
    return 0;
}

static PyMethodDef core_functions[] = {
    {"cost_block", cost_block, METH_VARARGS,
     "cost_block(code, address) -> (cycles, flags) as CostModel.block_cost_pure, or None: "
     "a block the reference costs (_cost.c)"},
    {"cost_insn", cost_insn, METH_VARARGS,
     "cost_insn(code, address) -> (size, cycles, cycles after a load/store, is a load/store, "
     "kind, extra) as CostModel._insn_facts for the instruction at code[0:], or None"},
    {NULL}
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",
    "The Cortex-M's hot paths in C: exceptions, the NVIC, the MPU's checks, the run loop, "
    "block costing (emu/cpu/_core.h).", -1, core_functions, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__core(void) {
    if (core_intern() || clock_import())
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL)
        return NULL;
    PyTypeObject *types[] = {&RegsType, &ExcHookType, &FlashGuardType, &PageMapType};
    const char *names[] = {"Regs", "ExcHook", "FlashGuard", "PageMap"};
    if (add_types(m, types, names, 4)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
