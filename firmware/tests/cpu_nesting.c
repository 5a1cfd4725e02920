/* Deeper nesting (four levels, each returning to handler mode with
 * EXC_RETURN 0xFFFFFFF1), a chain of tail-chained handlers, NMI through
 * ICSR.NMIPENDSET preempting everything (even FAULTMASK), and VTOR
 * relocation to a vector table in RAM (ARMv7-M B1.5, B3.2.5). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t log_[32];
static volatile uint32_t nlog;
static volatile uint32_t lr_of[8];
static void mark(uint32_t v) { log_[nlog++] = v; }

/* Nesting: IRQ10 (0xC0) pends IRQ11 (0x80) pends IRQ12 (0x40) pends IRQ13 (0x00) */
void IRQ10_Handler(void) { lr_of[0] = (uint32_t)__builtin_return_address(0); mark(10); irq_pend(11); dsb_isb(); mark(110); }
void IRQ11_Handler(void) { lr_of[1] = (uint32_t)__builtin_return_address(0); mark(11); irq_pend(12); dsb_isb(); mark(111); }
void IRQ12_Handler(void) { lr_of[2] = (uint32_t)__builtin_return_address(0); mark(12); irq_pend(13); dsb_isb(); mark(112); }
void IRQ13_Handler(void) { lr_of[3] = (uint32_t)__builtin_return_address(0); mark(13);
                           lr_of[4] = SCB_ICSR; }

/* Tail chain: IRQ20 pends 21, 22, 23 (same priority); each runs after the previous */
void IRQ20_Handler(void) { mark(20); irq_pend(23); irq_pend(22); irq_pend(21); dsb_isb(); mark(120); }
void IRQ21_Handler(void) { mark(21); }
void IRQ22_Handler(void) { mark(22); }
void IRQ23_Handler(void) { mark(23); }

/* NMI */
static volatile uint32_t nmi_ipsr, nmi_faultmask;
void NMI_Handler(void) {
    mark(2);
    nmi_ipsr = get_ipsr();
    __asm volatile("mrs %0, faultmask" : "=r"(nmi_faultmask));
}
void IRQ30_Handler(void) { mark(30); SCB_ICSR = 1u << 31; dsb_isb(); mark(130); }

/* RAM vector table */
static void ram_irq5(void) { mark(505); }
static void ram_systick(void) { mark(515); SYST_CSR = 0; }
static uint32_t ram_vectors[16 + 48] __attribute__((aligned(256)));
void IRQ5_Handler(void) { mark(5); }

int main(void) {
    /* nesting */
    irq_prio(10, 0xC0); irq_prio(11, 0x80); irq_prio(12, 0x40); irq_prio(13, 0x00);
    for (int i = 10; i <= 13; i++) irq_enable(i);
    irq_pend(10); dsb_isb();
    static const uint32_t want1[] = {10, 11, 12, 13, 112, 111, 110};
    int ok = nlog == 7;
    for (int i = 0; ok && i < 7; i++) ok = log_[i] == want1[i];
    CHECK("four-level nesting order", ok);
    CHECK_EQ("IRQ10 returns to thread", lr_of[0], 0xFFFFFFF9);
    CHECK_EQ("IRQ11 returns to handler", lr_of[1], 0xFFFFFFF1);
    CHECK_EQ("IRQ12 returns to handler", lr_of[2], 0xFFFFFFF1);
    CHECK_EQ("IRQ13 returns to handler", lr_of[3], 0xFFFFFFF1);
    CHECK_EQ("ICSR.RETTOBASE clear when nested", (lr_of[4] >> 11) & 1, 0);
    CHECK_EQ("ICSR.VECTACTIVE = 29", lr_of[4] & 0x1FF, 16 + 13);
    CHECK_EQ("nothing active after", NVIC_IABR(0) & 0x3C00, 0);

    /* tail-chaining: 21, 22, 23 in number order after IRQ20 */
    nlog = 0;
    for (int i = 20; i <= 23; i++) { irq_prio(i, 0x60); irq_enable(i); }
    irq_pend(20); dsb_isb();
    static const uint32_t want2[] = {20, 120, 21, 22, 23};
    ok = nlog == 5;
    for (int i = 0; ok && i < 5; i++) ok = log_[i] == want2[i];
    CHECK("tail-chain order 20,21,22,23", ok);

    /* NMI preempts an IRQ, even under FAULTMASK and PRIMASK */
    nlog = 0;
    irq_prio(30, 0x00); irq_enable(30);
    irq_pend(30); dsb_isb();
    CHECK("NMI preempted IRQ30", nlog == 3 && log_[0] == 30 && log_[1] == 2 && log_[2] == 130);
    CHECK_EQ("IPSR = 2 in NMI", nmi_ipsr, 2);
    nlog = 0;
    __asm volatile("cpsid f\n cpsid i" ::: "memory");
    SCB_ICSR = 1u << 31; dsb_isb();
    CHECK("NMI under FAULTMASK+PRIMASK", nlog == 1 && log_[0] == 2);
    CHECK_EQ("FAULTMASK still set in NMI", nmi_faultmask, 1);
    __asm volatile("cpsie i\n cpsie f" ::: "memory");

    /* VTOR: copy the flash table to RAM, override two vectors */
    const uint32_t *flash_vt = (const uint32_t *)SCB_VTOR;
    CHECK_EQ("VTOR reset value", (uint32_t)flash_vt, 0);
    for (int i = 0; i < 16 + 48; i++) ram_vectors[i] = i < 16 + 39 ? flash_vt[i] : 0;
    ram_vectors[16 + 5] = (uint32_t)ram_irq5;
    ram_vectors[15] = (uint32_t)ram_systick;
    SCB_VTOR = (uint32_t)ram_vectors;
    dsb_isb();
    CHECK_EQ("VTOR readback", SCB_VTOR, (uint32_t)ram_vectors);
    nlog = 0;
    irq_enable(5); irq_pend(5); dsb_isb();
    SYST_RVR = 999; SYST_CVR = 0; SYST_CSR = 7;
    while (SYST_CSR & 1) ;
    CHECK("IRQ5 and SysTick through RAM table", nlog == 2 && log_[0] == 505 && log_[1] == 515);
    SCB_VTOR = 0;
    irq_pend(5); dsb_isb();
    CHECK("IRQ5 through flash table again", nlog == 3 && log_[2] == 5);
    return harness_failures;
}
