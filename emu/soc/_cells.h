/*
 * Cells: the state the common register accesses touch, in C memory
 * (emu.soc._mmio.Cells; its pure-Python twin is emu.soc.ops.PyCells).
 *
 * An nRF peripheral's EVENTS_* registers, its INTEN and its interrupt line
 * live here (NrfPeripheral.events is this object, a mapping offset -> 0/1
 * for the event registers at 0x100 + 4n; ``inten`` and ``irq_line_level``
 * are properties over its members), and so do up to eight integer cells a
 * model names in NATIVE_CELLS (the RTC's counter base).  Python reads and
 * writes them as before; the MMIO callbacks read and write them without
 * taking the GIL, so a polled event, an INTENSET/INTENCLR that leaves the
 * line as it is, or an RTC COUNTER read costs no Python at all.
 *
 * The struct is declared here once; the type is emu/soc/_cells.c's, found
 * at import by the other modules that use Cells (cells_import).
 */
#ifndef EMU_SOC_CELLS_H
#define EMU_SOC_CELLS_H

#include "../_pyhelp.h"

#define NCELLS 8
typedef struct {
    PyObject_HEAD
    uint32_t keys;      /* bit n: an event register at 0x100 + 4n exists */
    uint32_t bits;      /* bit n: that event is set */
    unsigned long long inten;
    long long line;     /* the interrupt line's level (0/1) */
    long long cell[NCELLS];
    /* a streaming serial master (the legacy SPI): bytes completed in C, not
     * yet handed to the device (see "Streams" below) */
    unsigned char *pend;
    Py_ssize_t pend_n, pend_cap;
    long long last_txd;  /* the last TXD written in C, or -1 */
    /* the device's answers to the next bytes (bytes, NULL: 0xFF to each) and
     * how many of them the queued bytes used */
    PyObject *answers;
    Py_ssize_t ans_i;
} Cells;

/* the type, defined by emu/soc/_cells.c; the module's own pointer to it
 * (CELLS_TYPE_DEFINE once in each module that includes this) */
EMU_INTERNAL extern PyTypeObject *CellsType_p;
#define CELLS_TYPE_DEFINE PyTypeObject *CellsType_p;

static inline int cells_import(void) {
    return import_type("emu.soc._mmio", "Cells", &CellsType_p);
}

static inline int is_cells(PyObject *o) {
    return CellsType_p != NULL && PyObject_TypeCheck(o, CellsType_p);
}

#endif
