/* Sleep (ARMv7-M B1.5.19): WFI with nothing pending sleeps until the next
 * SysTick interrupt (the emulator jumps time to it); WFE with the event
 * register (SEV then WFE returns at once); SCR.SEVONPEND (a disabled
 * interrupt becoming pending is a WFE wake-up event; one PRIMASK holds
 * back is not); SCR.SLEEPONEXIT
 * (the core sleeps again on return to thread mode, so only handlers run). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define PERIOD 6400000u   /* 100 ms at 64 MHz */
static volatile uint32_t ticks;
static volatile uint32_t stop_at;
void SysTick_Handler(void) {
    ticks++;
    if (ticks == stop_at) SCB_SCR &= ~2u;   /* SLEEPONEXIT off: back to thread */
}
static volatile uint32_t irq7_runs;
void IRQ7_Handler(void) { irq7_runs++; }

static inline void wfi(void) { __asm volatile("wfi" ::: "memory"); }
static inline void wfe(void) { __asm volatile("wfe" ::: "memory"); }
static inline void sev(void) { __asm volatile("sev" ::: "memory"); }

int main(void) {
    /* 1. WFI: five sleeps, one SysTick interrupt each */
    SYST_RVR = PERIOD - 1;
    SYST_CVR = 0;
    SYST_CSR = 7;
    for (int i = 0; i < 5; i++) wfi();
    CHECK_EQ("five WFI wake-ups by SysTick", ticks, 5);

    /* 2. SEV sets the event register: the next WFE returns at once and clears it */
    SYST_CSR = 0;
    uint32_t t = ticks;
    sev();
    wfe();
    CHECK_EQ("SEV then WFE does not sleep", ticks, t);

    /* 3. SEVONPEND: a disabled interrupt becoming pending wakes WFE */
    SCB_SCR |= 1u << 4;
    sev(); wfe();               /* event register now clear */
    irq_disable(7);
    irq_pend(7);                /* pending, not enabled: not taken */
    wfe();                      /* returns: SEVONPEND set the event register */
    CHECK_EQ("SEVONPEND woke WFE", irq7_runs, 0);
    CHECK_EQ("IRQ7 still pending", (NVIC_ISPR(0) >> 7) & 1, 1);
    NVIC_ICPR(0) = 1u << 7;
    SCB_SCR &= ~(1u << 4);

    /* without SEVONPEND, pending a disabled IRQ does not wake: SysTick does */
    sev(); wfe();
    irq_pend(7);
    SYST_CVR = 0;
    SYST_CSR = 7;
    t = ticks;
    wfe();
    CHECK_EQ("WFE woken by SysTick, not by disabled IRQ7", ticks, t + 1);
    NVIC_ICPR(0) = 1u << 7;

    /* 3b. WFE under PRIMASK: an enabled interrupt that PRIMASK holds back is
     * no wake-up event (Cortex-M4 Generic User Guide 3.12.11: "an exception,
     * unless masked by the exception mask registers"); with SEVONPEND the
     * core sleeps until SysTick becomes pending */
    SYST_CSR = 0;
    SCB_SCR |= 1u << 4;
    irq_prio(7, 0x20);
    irq_enable(7);
    cpsid();
    irq_pend(7);                /* taken only once PRIMASK clears */
    sev(); wfe();               /* event register now clear */
    SYST_CVR = 0;
    SYST_CSR = 7;
    wfe();
    CHECK_EQ("WFE under PRIMASK slept until SysTick pended", (SCB_ICSR >> 26) & 1, 1);
    CHECK_EQ("IRQ7 held back by PRIMASK", irq7_runs, 0);
    t = ticks;
    cpsie();
    CHECK_EQ("IRQ7 taken after CPSIE", irq7_runs, 1);
    CHECK_EQ("SysTick taken after CPSIE", ticks, t + 1);
    irq_disable(7);
    SCB_SCR &= ~(1u << 4);

    /* 4. SLEEPONEXIT: thread sleeps once; handlers run until the 5th tick clears it */
    uint32_t thread_wakeups = 0;
    stop_at = ticks + 5;
    SCB_SCR |= 2u;
    wfi();
    thread_wakeups++;
    CHECK_EQ("SLEEPONEXIT: five ticks before thread resumed", ticks, stop_at);
    CHECK_EQ("thread ran once", thread_wakeups, 1);
    SYST_CSR = 0;
    return harness_failures;
}
