/* A workload for snapshots (tests/machine/test_snapshot_declared.py) that
 * goes through every exception path of the core, over and over, forever:
 *   - SysTick (priority 0xC0) every 2000 cycles pends IRQ20 and IRQ21 (0xC0):
 *     they tail-chain after it, and after each other;
 *   - IRQ20 masks with PRIMASK, pends IRQ23 (0xC0) then IRQ24 (0x40) and
 *     unmasks: the later, higher one is taken first (late arrival), and it
 *     preempts IRQ20 (a nested frame, EXC_RETURN 0xFFFFFFE1);
 *   - the thread keeps FP registers live (CONTROL.FPCA = 1, FPCCR.LSPEN as
 *     reset: lazy FP stacking) and every handler uses the FPU, so every
 *     frame is the extended one (EXC_RETURN 0xFFFFFFE9 from the thread).
 * The handlers count what they saw; every 64 SysTicks the thread prints the
 * counts and its FP accumulator ("n= ... tc= ... late= ... fpx= ... acc=").
 * It never exits. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks, chained, late, late_wrong, fp_frames, nested_fp;
static volatile uint32_t order_hi;            /* IRQ24 ran (before IRQ23) */
static volatile float acc_irq = 1.0f;

static inline uint32_t exc_return(void) { return (uint32_t)__builtin_return_address(0); }

static void count_frame(uint32_t lr) {
    if ((lr & 0x10) == 0)                     /* bit 4 clear: extended (FP) frame */
        fp_frames++;
}

void SysTick_Handler(void) {
    count_frame(exc_return());
    ticks++;
    acc_irq = acc_irq * 1.0009765625f + 0.25f;
    irq_pend(21);
    irq_pend(20);                             /* both after this one: tail-chained */
}

void IRQ20_Handler(void) {
    count_frame(exc_return());
    chained++;
    order_hi = 0;
    acc_irq = acc_irq - 0.125f;               /* FP in the handler: FPCA = 1 again */
    cpsid();
    irq_pend(23);                             /* low first ... */
    irq_pend(24);                             /* ... then high: arrives late, taken first */
    dsb_isb();
    cpsie();
    dsb_isb();
}

void IRQ21_Handler(void) {
    count_frame(exc_return());
    chained++;
    acc_irq = acc_irq * 0.99951171875f;
}

void IRQ23_Handler(void) {
    count_frame(exc_return());
    if (!order_hi)
        late_wrong++;
    acc_irq = acc_irq + 0.5f;
}

void IRQ24_Handler(void) {
    uint32_t lr = exc_return();
    count_frame(lr);
    if (lr == 0xFFFFFFE1)                     /* nested over IRQ20, FP context */
        nested_fp++;
    order_hi = 1;
    late++;
    acc_irq = acc_irq * 0.5f + 1.0f;
}

int main(void) {
    irq_prio(20, 0xC0); irq_prio(21, 0xC0); irq_prio(23, 0xC0); irq_prio(24, 0x40);
    irq_enable(20); irq_enable(21); irq_enable(23); irq_enable(24);
    SCB_SHPR8(15) = 0xC0;                     /* SysTick */
    volatile float acc = 3.0f;                /* FP live in the thread: FPCA = 1 */
    SYST_RVR = 2000 - 1;
    SYST_CVR = 0;
    SYST_CSR = 7;                             /* processor clock, interrupt, enable */
    uint32_t printed = 0;
    for (;;) {
        acc = acc * 1.000244140625f + 1.0f;
        if (acc > 65536.0f)
            acc = acc - 65536.0f;
        if (ticks - printed >= 64) {
            printed = ticks;
            union { float f; uint32_t u; } a = {acc}, b = {acc_irq};
            semihost_puts("n="); put_dec(ticks);
            semihost_puts(" tc="); put_dec(chained);
            semihost_puts(" late="); put_dec(late);
            semihost_puts(" wrong="); put_dec(late_wrong);
            semihost_puts(" fpx="); put_dec(fp_frames);
            semihost_puts(" nfp="); put_dec(nested_fp);
            semihost_puts(" acc="); put_hex(a.u);
            semihost_puts(" irq="); put_hex(b.u);
            semihost_puts("\n");
        }
    }
}
