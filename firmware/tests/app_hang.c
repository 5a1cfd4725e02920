/* Used by the bootloader tests: an application that hangs (prints a line,
 * then spins without feeding the watchdog the bootloader started). */
#include "harness.h"
int main(void) {
    semihost_puts("hanging\n");
    for (;;) __asm volatile("nop");
}
