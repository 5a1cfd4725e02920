/*
 * A block's cycles and loop-watch flags from its Thumb bytes, without
 * capstone (emu/cpu/cycles.py: CostModel.block_cost_pure, the reference).
 *
 * The reference reads capstone's text of each instruction (mnemonic and
 * operands); this decodes the encodings a compiler emits most and gives,
 * for each, the facts the reference derives from that text
 * (CostModel._insn_facts: cycles, cycles after a single load/store,
 * whether it is one, its kind for the loop watch, and the call's or the
 * stack's figures), IT blocks included (it_cost: the reference's costs
 * there).  Anything else (floating point, writeback through SP, MSR/MRS
 * and the rarer hints and system instructions, the encodings the
 * architecture calls UNPREDICTABLE) makes the whole block the reference's:
 * cost_block answers None.  So does a block that ends in a conditional
 * branch back to its own start (a countdown loop: countdown_flags reads
 * the operands).  tests/twins/drivers.py::cost compares every 16-bit
 * encoding and a sweep of the 32-bit ones against the reference,
 * instruction by instruction and block by block.
 */
#include "_core.h"

enum { K_PURE, K_CALL, K_STACK, K_OTHER };          /* cycles.py _K_* */
enum { ST_NONE, ST_STORE, ST_PUSH, ST_POP };

typedef struct {
    int size;            /* 2 or 4; 0: not decoded here */
    int c0, c1;          /* cycles; after a single load/store */
    int ldst;            /* a single load/store (the next one pipelines) */
    int kind;            /* K_* */
    int bl;              /* K_CALL: a BL (not BX LR) */
    int st, words, pc;   /* K_STACK: ST_*, registers moved, a POP of PC */
    int cond_target;     /* a conditional direct branch: 1, its target in target */
    int name_ls;         /* capstone's mnemonic starts with ldr or str */
    int branch;          /* B (its IT form is b<cond>) */
    int it;              /* an IT: the instructions it makes conditional */
    int cbz;             /* CBZ, CBNZ (not allowed in an IT block) */
    uint32_t target;
} Facts;

#define BITS(v, hi, lo) (((v) >> (lo)) & ((1u << ((hi) - (lo) + 1)) - 1))

static int popcount16(uint32_t v) {
    int n = 0;
    for (v &= 0xFFFF; v; v &= v - 1)
        n++;
    return n;
}

static int set(Facts *f, int size, int cost, int kind) {
    f->size = size;
    f->c0 = f->c1 = cost;
    f->kind = kind;
    return size;
}

/* a single load or store: 2 cycles, 1 after another */
static int ldst(Facts *f, int size, int kind) {
    set(f, size, 2, kind);
    f->c1 = 1;
    f->ldst = f->name_ls = 1;
    return size;
}

static int stack(Facts *f, int size, int cost, int st, int words, int pc) {
    set(f, size, cost, K_STACK);
    f->st = st;
    f->words = words;
    f->pc = pc;
    return size;
}

/* a single store through a register other than SP (a loop may hold it) */
static int store(Facts *f, int size) {
    ldst(f, size, K_STACK);
    f->st = ST_STORE;
    return size;
}

/* a data-processing instruction whose first operand is register r: pure
 * unless it is SP (PC: left to the reference) */
static int alu(Facts *f, int size, unsigned r) {
    if (r == 15)
        return 0;
    return set(f, size, 1, r == 13 ? K_OTHER : K_PURE);
}

static int decode16(uint32_t hw, uint32_t addr, Facts *f) {
    unsigned top5 = hw >> 11;
    if (top5 <= 3 || (hw >> 13) == 1 || (hw >> 10) == 0x10)
        return set(f, 2, 1, K_PURE);           /* shifts, add/sub, imm8, data processing */
    if ((hw >> 10) == 0x11) {                   /* special data, BX/BLX */
        unsigned op = BITS(hw, 9, 8), rm = BITS(hw, 6, 3);
        unsigned rdn = BITS(hw, 7, 7) << 3 | BITS(hw, 2, 0);
        if (op == 3) {
            if (BITS(hw, 2, 0) != 0 || rm == 15)
                return 0;
            if (BITS(hw, 7, 7))                 /* BLX rm */
                return set(f, 2, 3, K_OTHER);
            set(f, 2, 3, rm == 14 ? K_CALL : K_OTHER);
            return 2;                           /* BX LR returns: a call's kind, not BL */
        }
        if (rm == 15)
            return 0;
        if (op == 1 && BITS(hw, 7, 7) == 0 && rm < 8)
            return 0;                           /* CMP of two low registers: UNPREDICTABLE */
        return alu(f, 2, rdn);                  /* ADD, CMP, MOV (high registers) */
    }
    if (top5 == 9)                              /* LDR literal */
        return ldst(f, 2, K_PURE);
    if ((hw >> 12) == 5)                        /* load/store, register offset */
        return BITS(hw, 11, 9) <= 2 ? store(f, 2) : ldst(f, 2, K_PURE);
    if ((hw >> 13) == 3 || (hw >> 12) == 8)     /* load/store, immediate offset */
        return BITS(hw, 11, 11) ? ldst(f, 2, K_PURE) : store(f, 2);
    if ((hw >> 12) == 9)                        /* SP-relative: a store names SP */
        return ldst(f, 2, BITS(hw, 11, 11) ? K_PURE : K_OTHER);
    if (top5 == 0x14)                           /* ADR */
        return set(f, 2, 1, K_OTHER);
    if (top5 == 0x15)                           /* ADD Rd, SP, #imm */
        return set(f, 2, 1, K_PURE);
    if ((hw >> 12) == 0xB) {                    /* miscellaneous */
        if ((hw >> 8) == 0xB0)                  /* ADD/SUB SP, #imm */
            return set(f, 2, 1, K_OTHER);
        if ((hw & 0xF500) == 0xB100) {          /* CBZ, CBNZ */
            f->cbz = 1;
            return set(f, 2, 2, K_PURE);
        }
        if ((hw >> 8) == 0xB2)                  /* SXTH, SXTB, UXTH, UXTB */
            return set(f, 2, 1, K_PURE);
        if ((hw >> 9) == 0x5A) {                /* PUSH */
            int n = popcount16(hw & 0xFF) + (int)BITS(hw, 8, 8);
            return n ? stack(f, 2, 1 + n, ST_PUSH, n, 0) : 0;
        }
        if ((hw >> 9) == 0x5E) {                /* POP */
            int pc = (int)BITS(hw, 8, 8), n = popcount16(hw & 0xFF) + pc;
            return n ? stack(f, 2, 1 + n + (pc ? 2 : 0), ST_POP, n, pc) : 0;
        }
        if ((hw & 0xFFEC) == 0xB660 && (hw & 3))    /* CPSIE, CPSID (I, F) */
            return set(f, 2, 1, K_OTHER);
        if ((hw >> 8) == 0xBA) {                /* REV, REV16, -, REVSH */
            unsigned op = BITS(hw, 7, 6);
            return op == 2 ? 0 : set(f, 2, 1, op == 3 ? K_OTHER : K_PURE);
        }
        if ((hw >> 8) == 0xBE)                  /* BKPT */
            return set(f, 2, 1, K_OTHER);
        if ((hw >> 8) == 0xBF && (hw & 0xF) && BITS(hw, 7, 4) < 14) {
            set(f, 2, 1, K_OTHER);              /* IT: firstcond, mask */
            f->it = 4 - __builtin_ctz(hw & 0xF);
            return 2;
        }
        if (hw == 0xBF00)                       /* NOP */
            return set(f, 2, 1, K_PURE);
        if (hw == 0xBF10 || hw == 0xBF20 || hw == 0xBF30 || hw == 0xBF40)
            return set(f, 2, 1, K_OTHER);       /* YIELD, WFE, WFI, SEV */
        return 0;                               /* IT (its block: the reference), others */
    }
    if ((hw >> 12) == 0xC) {                    /* STM, LDM */
        int n = popcount16(hw & 0xFF);
        return n ? set(f, 2, 1 + n, K_OTHER) : 0;
    }
    if ((hw >> 12) == 0xD) {
        unsigned cond = BITS(hw, 11, 8);
        if (cond == 14)
            return 0;                           /* UDF */
        if (cond == 15)                         /* SVC */
            return set(f, 2, 1, K_OTHER);
        set(f, 2, 2, K_PURE);                   /* B<cond> */
        f->cond_target = 1;
        f->target = addr + 4 + (uint32_t)((int32_t)(int8_t)(hw & 0xFF) * 2);
        return 2;
    }
    f->branch = 1;                              /* 11100: B (11101 and up: 32-bit) */
    return set(f, 2, 2, K_PURE);
}

/* data processing, modified immediate (op) or shifted register (reg):
 * AND/TST, BIC, ORR/MOV, ORN/MVN, EOR/TEQ, ADD/CMN, ADC, SBC, SUB/CMP, RSB */
static int dp32(Facts *f, unsigned op, unsigned s, unsigned rn, unsigned rd) {
    int compare = rd == 15 && s && (op == 0 || op == 4 || op == 8 || op == 13);
    if (!(op <= 4 || op == 8 || op == 10 || op == 11 || op == 13 || op == 14))
        return 0;
    if (compare)
        return alu(f, 4, rn);
    if (rn == 15 && op != 2 && op != 3)
        return 0;
    return alu(f, 4, rd);
}

static int low12(unsigned r) {           /* a register operand other than SP and PC */
    return r != 13 && r != 15;
}

static int decode32(uint32_t hw1, uint32_t hw2, uint32_t addr, Facts *f) {
    unsigned rn = BITS(hw1, 3, 0), rd = BITS(hw2, 11, 8), rt = BITS(hw2, 15, 12);
    unsigned rm = BITS(hw2, 3, 0);
    if ((hw1 & 0xF800) == 0xF000 && (hw2 & 0x8000)) {     /* branches, misc control */
        if ((hw2 & 0xD000) == 0xD000) {                    /* BL */
            set(f, 4, 2, K_CALL);
            f->bl = 1;
            return 4;
        }
        if ((hw2 & 0xD000) == 0x9000) {                    /* B.W */
            f->branch = 1;
            return set(f, 4, 2, K_PURE);
        }
        if ((hw2 & 0xD000) != 0x8000)
            return 0;
        if ((BITS(hw1, 9, 6) & 0xE) != 0xE) {              /* B<cond>.W */
            uint32_t imm = BITS(hw1, 10, 10) << 20 | BITS(hw2, 11, 11) << 19 |
                           BITS(hw2, 13, 13) << 18 | BITS(hw1, 5, 0) << 12 |
                           BITS(hw2, 10, 0) << 1;
            set(f, 4, 2, K_PURE);
            f->cond_target = 1;
            f->target = addr + 4 + (uint32_t)(((int32_t)(imm << 11)) >> 11);
            return 4;
        }
        if (hw1 == 0xF3AF && (hw2 & 0xFF00) == 0x8000) {   /* hints */
            unsigned op = hw2 & 0xFF;
            return op == 0 ? set(f, 4, 1, K_PURE) : op <= 4 ? set(f, 4, 1, K_OTHER) : 0;
        }
        if (hw1 == 0xF3BF && (hw2 & 0xFF00) == 0x8F00) {   /* DSB, DMB, ISB */
            unsigned op = BITS(hw2, 7, 4);
            return op >= 4 && op <= 6 ? set(f, 4, 4, K_OTHER) : 0;
        }
        return 0;
    }
    if ((hw1 & 0xFA00) == 0xF000 && !(hw2 & 0x8000))       /* modified immediate */
        return dp32(f, BITS(hw1, 8, 5), BITS(hw1, 4, 4), rn, rd);
    if ((hw1 & 0xFA00) == 0xF200 && !(hw2 & 0x8000)) {     /* plain binary immediate */
        unsigned op = BITS(hw1, 8, 4);
        if (!low12(rd))
            return 0;
        if (op == 0x00 || op == 0x0A)                      /* ADDW, SUBW */
            return rn == 15 ? 0 : set(f, 4, 1, K_OTHER);
        if (op == 0x04 || op == 0x0C)                      /* MOVW, MOVT */
            return set(f, 4, 1, K_PURE);
        if ((op == 0x14 || op == 0x16 || op == 0x1C) && !BITS(hw1, 10, 10) &&
                !(hw2 & 0x20) && rn != 13 && (rn != 15 || op == 0x16))
            return set(f, 4, 1, K_PURE);                   /* SBFX, BFI/BFC, UBFX */
        return 0;
    }
    if ((hw1 & 0xFE40) == 0xE800) {                        /* load/store multiple */
        unsigned op = BITS(hw1, 8, 7), w = BITS(hw1, 5, 5), l = BITS(hw1, 4, 4);
        int n = popcount16(hw2), pc = (int)BITS(hw2, 15, 15);
        if ((op != 1 && op != 2) || n < 2 || (hw2 & 0x2000) || rn == 15)
            return 0;
        if (l ? (pc && (hw2 & 0x4000)) : pc)
            return 0;
        if (rn == 13) {
            if (op == 1 && l && w)                         /* POP.W */
                return stack(f, 4, 1 + n + (pc ? 2 : 0), ST_POP, n, pc);
            if (op == 2 && !l && w)                        /* PUSH.W */
                return stack(f, 4, 1 + n, ST_PUSH, n, 0);
            return 0;
        }
        if (l && w && (hw2 >> rn) & 1)
            return 0;
        return set(f, 4, 1 + n + (l && pc ? 2 : 0), K_OTHER);
    }
    if ((hw1 & 0xFE40) == 0xE840) {                        /* dual, exclusive, table */
        unsigned p = BITS(hw1, 8, 8), w = BITS(hw1, 5, 5);
        if (p || w) {                                      /* LDRD, STRD */
            if (rn == 15 || !low12(rt) || !low12(rd))
                return 0;
            f->name_ls = 1;
            return set(f, 4, 3, K_OTHER);
        }
        if ((hw1 & 0xFFE0) == 0xE840 && low12(rn) && low12(rt) &&
                ((hw1 & 0x10) ? rd == 15 : low12(rd) && rd != rt && rd != rn))
                                                           /* LDREX, STREX */
            return ldst(f, 4, K_OTHER);
        if ((hw1 & 0xFFF0) == 0xE8D0 && (hw2 & 0xFFE0) == 0xF000 && rn != 13 && low12(rm))
            return set(f, 4, 4, K_OTHER);                  /* TBB, TBH */
        return 0;
    }
    if ((hw1 & 0xFE00) == 0xF800) {                        /* load/store single */
        unsigned sign = BITS(hw1, 8, 8), y = BITS(hw1, 7, 7), size = BITS(hw1, 6, 5);
        unsigned l = BITS(hw1, 4, 4);
        if (size == 3 || (sign && (!l || size == 2)) || rt == 15)
            return 0;
        if (rn == 15) {                                    /* literal */
            if (!l)
                return 0;
        } else if (!y) {
            if (hw2 & 0x800) {                             /* imm8 */
                unsigned puw = BITS(hw2, 10, 8);
                if (puw == 6) {                            /* LDRT, STRT, ...: unprivileged */
                    if (rn == 13)
                        return 0;
                    return ldst(f, 4, K_OTHER);
                }
                if (puw != 4) {                            /* writeback */
                    if ((puw & 5) == 0 || rn == 13 || rt == rn)
                        return 0;                          /* (through SP: a push or pop) */
                }
            } else if (BITS(hw2, 10, 6) != 0 || !low12(rm)) {
                return 0;                                  /* register offset */
            }
        }
        if (l)
            return ldst(f, 4, rt == 13 ? K_OTHER : K_PURE);
        if (rt == 13 || rn == 13)
            return ldst(f, 4, K_OTHER);
        return store(f, 4);
    }
    if ((hw1 & 0xFE00) == 0xEA00 && !(hw2 & 0x8000)) {     /* shifted register */
        unsigned op = BITS(hw1, 8, 5), s = BITS(hw1, 4, 4);
        if (!low12(rm))
            return 0;
        if (op == 2 && rn == 15 && BITS(hw2, 5, 4) == 3 && BITS(hw2, 14, 12) == 0 &&
                BITS(hw2, 7, 6) == 0)                      /* RRX */
            return rd == 15 ? 0 : set(f, 4, 1, K_OTHER);
        return dp32(f, op, s, rn, rd);
    }
    if ((hw1 & 0xFF00) == 0xFA00 && (hw2 & 0xF000) == 0xF000) {
        if (!low12(rd) || !low12(rm))
            return 0;
        if (!(hw1 & 0x80) && (hw2 & 0xF0) == 0)            /* LSL/LSR/ASR/ROR (register) */
            return low12(rn) ? set(f, 4, 1, K_PURE) : 0;
        if (!(hw1 & 0x80) && (hw2 & 0xC0) == 0x80 && !(hw2 & 0x40)) {
            unsigned op = BITS(hw1, 6, 4);                 /* extends */
            if (op == 2 || op == 3 || op >= 6 || rn == 13)
                return 0;
            return set(f, 4, 1, rn == 15 ? K_PURE : K_OTHER);
        }
        if ((hw1 & 0xFFC0) == 0xFA80 && (hw2 & 0xC0) == 0x80 && rn == rm) {
            unsigned op1 = BITS(hw1, 5, 4), op2 = BITS(hw2, 5, 4);
            if (op1 == 1)                                  /* REV, REV16, RBIT, REVSH */
                return set(f, 4, 1, op2 == 3 ? K_OTHER : K_PURE);
            if (op1 == 3 && op2 == 0)                      /* CLZ */
                return set(f, 4, 1, K_PURE);
        }
        return 0;
    }
    if ((hw1 & 0xFF80) == 0xFB00 && (hw2 & 0xE0) == 0) {   /* MUL, MLA, MLS */
        if (BITS(hw1, 6, 4) != 0 || !low12(rn) || !low12(rd) || !low12(rm) || rt == 13)
            return 0;
        if ((hw2 & 0x10) && rt == 15)
            return 0;
        return set(f, 4, 1, K_PURE);
    }
    if ((hw1 & 0xFF80) == 0xFB80) {                        /* long multiply, divide */
        unsigned op1 = BITS(hw1, 6, 4), op2 = BITS(hw2, 7, 4);
        if (!low12(rn) || !low12(rd) || !low12(rm))
            return 0;
        if (op2 == 0 && (op1 == 0 || op1 == 2 || op1 == 4 || op1 == 6) && low12(rt) && rt != rd)
            return set(f, 4, 1, K_PURE);                   /* SMULL, UMULL, SMLAL, UMLAL */
        if (op2 == 15 && (op1 == 1 || op1 == 3) && rt == 15)
            return set(f, 4, 7, K_OTHER);                  /* SDIV, UDIV */
        return 0;
    }
    return 0;
}

/* In an IT block capstone spells the condition into the mnemonic
 * ("addeq", "ldrne.w", "bxeq"), and the reference's cost table, which
 * matches mnemonics, then knows only B ("beq": 2) and the names that start
 * with ldr or str (single loads and stores, LDRD/STRD and the exclusives
 * among them: 2, 1 after another); everything else costs 1 (an
 * approximation of cycles.py, kept as it is so that both sides agree). */
static void it_cost(Facts *f) {
    if (f->branch) {
        f->c0 = f->c1 = 2;
        f->ldst = 0;
    } else if (f->name_ls) {
        f->c0 = 2;
        f->c1 = f->ldst = 1;
    } else {
        f->c0 = f->c1 = 1;
        f->ldst = 0;
    }
}

/* one instruction at code[0..len): its facts, or size 0 */
static int decode(const uint8_t *code, Py_ssize_t len, uint32_t addr, Facts *f) {
    memset(f, 0, sizeof *f);
    if (len < 2)
        return 0;
    uint32_t hw = code[0] | (uint32_t)code[1] << 8;
    if ((hw >> 11) < 0x1D)
        return decode16(hw, addr, f);
    if (len < 4)
        return 0;
    return decode32(hw, code[2] | (uint32_t)code[3] << 8, addr, f);
}

/* the arguments (code, address): a bytes-like object and a 32-bit address */
static int cost_args(PyObject *args, Py_buffer *b, uint32_t *addr) {
    long long a;
    if (!PyArg_ParseTuple(args, "y*L", b, &a))
        return -1;
    if (a < 0 || a > 0xFFFFFFFFLL) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_ValueError, "address %lld is not a 32-bit address", a);
        return -1;
    }
    *addr = (uint32_t)a;
    return 0;
}

/* cost_insn(code, address) -> (size, cycles, cycles after a load/store,
 * is a load/store, kind, extra) as CostModel._insn_facts, or None */
PyObject *cost_insn(PyObject *self, PyObject *args) {
    Py_buffer b;
    uint32_t addr;
    Facts f;
    if (cost_args(args, &b, &addr))
        return NULL;
    int n = decode(b.buf, b.len, addr, &f);
    PyBuffer_Release(&b);
    if (!n)
        Py_RETURN_NONE;
    PyObject *extra;
    if (f.kind == K_CALL)
        extra = PyBool_FromLong(f.bl);
    else if (f.kind != K_STACK)
        extra = Py_NewRef(Py_None);
    else if (f.st == ST_STORE)
        extra = Py_BuildValue("(s)", "store");
    else if (f.st == ST_PUSH)
        extra = Py_BuildValue("(si)", "push", f.words);
    else
        extra = Py_BuildValue("(siO)", "pop", f.words, f.pc ? Py_True : Py_False);
    return Py_BuildValue("(iiiOiN)", n, f.c0, f.c1, f.ldst ? Py_True : Py_False, f.kind, extra);
}

/* cost_block(code, address) -> (cycles, flags) as CostModel.block_cost_pure,
 * or None: the reference's block */
PyObject *cost_block(PyObject *self, PyObject *args) {
    Py_buffer b;
    uint32_t addr;
    if (cost_args(args, &b, &addr))
        return NULL;
    const uint8_t *code = b.buf;
    Py_ssize_t len = b.len, at = 0;
    long total = 0;
    int n = 0, prev_ldst = 0, pure = 1, call = 0, last_bl = 0, stack_seen = 0;
    int stores = 0, sp = 0, sp_top = 0;
    int in_it = 0;                          /* instructions an IT still makes conditional */
    Facts f;
    while (at < len) {
        int size = decode(code + at, len - at, addr + (uint32_t)at, &f);
        if (size && in_it) {
            in_it--;
            if (f.it || f.cbz || f.cond_target)
                size = 0;                       /* UNPREDICTABLE in an IT block */
            else
                it_cost(&f);
        }
        if (!size) {
            PyBuffer_Release(&b);
            Py_RETURN_NONE;
        }
        if (f.it)
            in_it = f.it;
        total += prev_ldst ? f.c1 : f.c0;
        prev_ldst = f.ldst;
        n++;
        last_bl = 0;
        at += size;
        if (!pure || f.kind == K_PURE)
            continue;
        if (f.kind == K_CALL) {
            call = 1;
            last_bl = f.bl;
        } else if (f.kind == K_OTHER) {
            pure = 0;
        } else {
            stack_seen = 1;
            if (f.st == ST_STORE) {
                stores++;
            } else if (f.st == ST_PUSH) {
                sp -= f.words;
            } else {
                sp += f.words;
                if (sp > sp_top)
                    sp_top = sp;
                call = call || f.pc;
            }
        }
    }
    PyBuffer_Release(&b);
    if (n == 0)
        Py_RETURN_NONE;
    long flags = 0;
    if (pure) {
        flags = BLOCK_PURE | (call ? BLOCK_CALL : 0) | (last_bl ? BLOCK_BL : 0);
        if (stack_seen) {
            if (stores > 255 || sp < -128 || sp >= 128 || sp_top > 255)
                flags = 0;
            else
                flags |= BLOCK_STORE | (long)stores << 8 | (long)(sp & 0xFF) << 16 |
                         (long)sp_top << 24;
        } else if (!call && n >= 2 && f.cond_target && f.target == addr) {
            Py_RETURN_NONE;                 /* maybe a countdown: countdown_flags reads it */
        }
    }
    return Py_BuildValue("(ll)", total > 1 ? total : 1, flags);
}
