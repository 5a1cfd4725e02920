/*
 * Streams:
 * The legacy SPI shifting pixel data to the display or reading the NOR:
 * TXD, READY, RXD for every byte.  While its model has put it in streaming
 * mode (cell 6 = 1: no READY interrupt, no PPI, and the selected device takes
 * a byte stream whose answers are known in advance: 0xFF from the ST7789 in
 * RAMWR, the next bytes of the array from the NOR in READ, given with
 * set_answers() and streaming stops when they run out), C does the model's work for
 * those registers (cells: 0 shifting byte or -1, 1 TXD buffer or -1, 2 due
 * tick, 3 RXD FIFO fill, 4-5 FIFO, 6 streaming, 7 ticks per byte) and queues
 * the completed bytes in the Cells.  Any entry into Python from an MMIO
 * access (any slot), and the end of every slice, first ends streaming and
 * hands the queued bytes to the model's flush(), so no Python code ever sees
 * the device behind the bus; the model turns streaming on again when it next
 * handles an access and finds the conditions still true.
 */
#include "_fabric.h"


/* End streaming and hand queued bytes over (GIL held); 0 or -1. */
int streams_off_c(StreamSet *ss) {
    int rc = 0;
    for (int i = 0; ss != NULL && i < ss->n; i++) {
        Cells *c = ss->cells[i];
        c->cell[S_ON] = 0;
        if (c->pend_n > 0 || c->last_txd >= 0) {
            PyObject *r = PyObject_CallNoArgs(ss->flush[i]);
            if (r == NULL) {
                PyErr_WriteUnraisable(ss->flush[i]);
                rc = -1;
            }
            Py_XDECREF(r);
        }
    }
    return rc;
}

static PyObject *StreamSet_register(StreamSet *ss, PyObject *args) {
    PyObject *cells, *flush;
    if (!PyArg_ParseTuple(args, "O!O", &CellsType, &cells, &flush))
        return NULL;
    if (ss->n == MAX_STREAMS) {
        PyErr_SetString(PyExc_RuntimeError, "too many streaming serial masters");
        return NULL;
    }
    Py_INCREF(cells);
    Py_INCREF(flush);
    ss->cells[ss->n] = (Cells *)cells;
    ss->flush[ss->n] = flush;
    ss->n++;
    Py_RETURN_NONE;
}

static PyObject *StreamSet_off(StreamSet *ss, PyObject *noargs) {
    streams_off_c(ss);
    Py_RETURN_NONE;
}

static int StreamSet_traverse(StreamSet *ss, visitproc visit, void *arg) {
    for (int i = 0; i < ss->n; i++) {
        Py_VISIT((PyObject *)ss->cells[i]);
        Py_VISIT(ss->flush[i]);
    }
    return 0;
}

static int StreamSet_clear(StreamSet *ss) {
    for (int i = 0; i < ss->n; i++) {
        Py_CLEAR(ss->cells[i]);
        Py_CLEAR(ss->flush[i]);
    }
    ss->n = 0;
    return 0;
}

static void StreamSet_dealloc(StreamSet *ss) {
    PyObject_GC_UnTrack(ss);
    StreamSet_clear(ss);
    Py_TYPE(ss)->tp_free((PyObject *)ss);
}

static PyMethodDef StreamSet_methods[] = {
    {"register", (PyCFunction)StreamSet_register, METH_VARARGS,
     "register(cells, flush): a streaming serial master and its hand-over"},
    {"off", (PyCFunction)StreamSet_off, METH_NOARGS,
     "end streaming and hand every queued byte to its model (after each slice)"},
    {NULL}
};

PyTypeObject StreamSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.StreamSet",
    .tp_doc = "One machine's streaming serial masters (see _mmio.c, Streams).",
    .tp_basicsize = sizeof(StreamSet),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)StreamSet_dealloc,
    .tp_traverse = (traverseproc)StreamSet_traverse,
    .tp_clear = (inquiry)StreamSet_clear,
    .tp_methods = StreamSet_methods,
};

/* Complete the bytes due by now; 1: the model must (RXD overflow, no memory). */
static int stream_complete(Cells *c, long long now) {
    while (c->cell[S_SHIFT] >= 0 && now >= c->cell[S_DUE]) {
        if (c->cell[S_RXN] >= 2)
            return 1;
        int answer = 0xFF;                          /* the stream's answer */
        if (c->answers != NULL) {
            if (c->ans_i >= PyBytes_GET_SIZE(c->answers))
                return 1;                           /* known answers used up */
            answer = (unsigned char)PyBytes_AS_STRING(c->answers)[c->ans_i];
        }
        if (c->pend_n == c->pend_cap) {
            Py_ssize_t cap = c->pend_cap ? 2 * c->pend_cap : 4096;
            unsigned char *p = PyMem_RawRealloc(c->pend, (size_t)cap);
            if (p == NULL)
                return 1;   /* not reached by firmware: error path: no memory */
            c->pend = p;
            c->pend_cap = cap;
        }
        c->pend[c->pend_n++] = (unsigned char)c->cell[S_SHIFT];
        c->cell[S_SHIFT] = -1;
        if (c->answers != NULL)
            c->ans_i++;
        c->cell[S_RX0 + c->cell[S_RXN]] = answer;
        c->cell[S_RXN]++;
        if (c->cell[S_TXBUF] >= 0) {               /* back to back on the wire */
            c->cell[S_SHIFT] = c->cell[S_TXBUF];
            c->cell[S_TXBUF] = -1;
            c->cell[S_DUE] += c->cell[S_BYTE];
        }
        if (c->cell[S_RXN] == 1)
            c->bits |= 1u << SPI_READY_BIT;
    }
    return 0;
}

/* A streaming access: 0 done, 1 the model must (stream off, or bail). */
int stream_access(Slot *s, COp *op, int is_write, uint64_t value, uint64_t *v) {
    Cells *c = op->cells;
    if (!c->cell[S_ON] || !in_slice(s))
        return 1;
    long long now = slice_now(s);
    if (stream_complete(c, now))
        return 1;
    switch (op->kind) {
    case R_EVENT:                        /* EVENTS_READY */
        *v = (c->bits >> SPI_READY_BIT) & 1;
        return 0;
    case W_EVENT:
        if (value & 1)
            c->bits |= 1u << SPI_READY_BIT;   /* not reached by firmware: drivers write READY only to clear it */
        else
            c->bits &= ~(1u << SPI_READY_BIT);
        return 0;
    case R_CALL:                         /* RXD */
        if (c->cell[S_RXN] == 0) {
            *v = 0;
            return 0;
        }
        *v = (uint64_t)c->cell[S_RX0] & 0xFF;
        c->cell[S_RX0] = c->cell[S_RX1];
        if (--c->cell[S_RXN] > 0)
            c->bits |= 1u << SPI_READY_BIT;
        return 0;
    case W_TXD:
        if (c->cell[S_SHIFT] < 0) {
            c->cell[S_SHIFT] = (long long)(value & 0xFF);
            c->cell[S_DUE] = now + c->cell[S_BYTE];
        } else if (c->cell[S_TXBUF] < 0) {
            c->cell[S_TXBUF] = (long long)(value & 0xFF);
        } else {
            return 1;                    /* both buffers full: the model logs it */
        }
        c->last_txd = (long long)(value & 0xFF);
        return 0;
    }
    return 1;   /* not reached by firmware: stream ops are READY, RXD and TXD only */
}

