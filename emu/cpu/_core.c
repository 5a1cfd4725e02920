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

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",
    "The Cortex-M's hot paths in C: exceptions, the NVIC, the MPU's checks, the run loop "
    "(emu/cpu/_core.h).", -1, NULL, NULL, NULL, NULL, NULL
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
