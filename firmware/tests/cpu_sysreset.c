/* AIRCR.SYSRESETREQ performs a system reset: the program restarts from the
 * reset vector with RAM kept.  A boot counter in .noinit (not zeroed by the
 * startup code) counts boots; the third boot reports and exits. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

__attribute__((section(".noinit"))) uint32_t boot_magic, boots;

int main(void) {
    if (boot_magic != 0xB007B007) { boot_magic = 0xB007B007; boots = 0; }
    boots++;
    semihost_puts("boot "); put_dec(boots); semihost_puts("\n");
    if (boots < 3) {
        SCB_SHPR8(11) = 0x40;            /* must be back to 0 after reset */
        SCB_AIRCR = 0x05FA0004;          /* VECTKEY | SYSRESETREQ */
        dsb_isb();
        for (;;) ;
    }
    CHECK_EQ("three boots", boots, 3);
    CHECK_EQ("SHPR2 reset by system reset", REG32(0xE000ED1C), 0);
    return harness_failures;
}
