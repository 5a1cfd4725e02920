/* POWER System OFF (PS v1.4 17.1.2): enter System OFF with a SENSE-configured
 * button pin, get woken by the board pressing it, and check what the wake-up
 * reset kept: RESETREAS.OFF, GPREGRET, RAM sections with retention.
 *
 * Boot 1 (RESETREAS.OFF clear): clear RESETREAS, store GPREGRET and two RAM
 * words (one in a retained section, one not), configure the PineTime button
 * (P0.13 input with pull-down, SENSE=High; BUTTON_EN P0.15 driven high) and
 * write SYSTEMOFF.  The loop after it counts iterations in retained RAM: the
 * CPU must run none of them.  The Python test checks the machine reports
 * System OFF, lets time pass, then presses the button.
 * Boot 2 (RESETREAS.OFF set): the checks (GPIO kept its configuration and
 * LATCH names the pin that woke the chip); main's return is the exit code. */
#include "harness.h"

#define POWER          0x40000000u
#define RESETREAS      (POWER + 0x400)
#define SYSTEMOFF      (POWER + 0x500)
#define GPREGRET       (POWER + 0x51C)
#define GPREGRET2      (POWER + 0x520)
#define RAM_POWERSET(n) (POWER + 0x904 + 16 * (n))
#define GPIO           0x50000000u
#define OUTSET         (GPIO + 0x508)
#define LATCH          (GPIO + 0x520)
#define PIN_CNF(n)     (GPIO + 0x700 + 4 * (n))

#define RESETREAS_OFF  (1u << 16)
#define RETAINED       0x20008000u   /* RAM[4] section 0: S0RETENTION set */
#define SPIN           0x20008004u   /* RAM[4] section 0: loop count after SYSTEMOFF */
#define LOST           0x2000A000u   /* RAM[5] section 0: not retained */

int main(void) {
    uint32_t rr = REG32(RESETREAS);
    if (!(rr & RESETREAS_OFF)) {
        semihost_puts("boot 1\n");
        REG32(RESETREAS) = rr;                       /* W1C: start from no cause */
        REG32(GPREGRET) = 0x5A;
        REG32(GPREGRET2) = 0x3C;
        REG32(RETAINED) = 0xC0FFEE01u;
        REG32(LOST) = 0xDEADBEEFu;
        REG32(SPIN) = 0;
        REG32(RAM_POWERSET(4)) = 1u << 16;           /* keep RAM[4] S0 in System OFF */
        REG32(PIN_CNF(15)) = 1;                      /* BUTTON_EN: output ... */
        REG32(OUTSET) = 1u << 15;                    /* ... high */
        REG32(PIN_CNF(13)) = (1u << 2) | (2u << 16); /* input, pull-down, SENSE=High */
        semihost_puts("entering System OFF\n");
        REG32(SYSTEMOFF) = 1;
        __asm volatile("dsb");
        for (;;)
            REG32(SPIN) += 1;
    }
    semihost_puts("boot 2: woken from System OFF\n");
    CHECK_EQ("resetreas_off", rr, RESETREAS_OFF);
    CHECK_EQ("gpregret_kept", REG32(GPREGRET), 0x5A);
    CHECK_EQ("gpregret2_kept", REG32(GPREGRET2), 0x3C);
    CHECK_EQ("retained_ram_kept", REG32(RETAINED), 0xC0FFEE01u);
    CHECK_EQ("unretained_ram_cleared", REG32(LOST), 0);
    CHECK_EQ("no_instruction_after_systemoff", REG32(SPIN), 0);
    CHECK_EQ("pin_cnf_kept_through_wakeup", REG32(PIN_CNF(13)), (1u << 2) | (2u << 16));
    CHECK_EQ("latch_names_the_wakeup_pin", REG32(LATCH), 1u << 13);
    return harness_failures;
}
