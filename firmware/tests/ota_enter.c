/* Used by the bootloader tests: what wasp-os's machine.enter_ota_dfu() does
 * (its build at 0x26000 writes POWER.GPREGRET = 0xA8 directly, then
 * NVIC_SystemReset): the Adafruit bootloader then starts in OTA DFU mode
 * although a valid application is present.  Prints a line first. */
#include "harness.h"
#define POWER_GPREGRET REG32(0x4000051C)
#define SCB_AIRCR      REG32(0xE000ED0C)
int main(void) {
    semihost_puts("entering OTA DFU\n");
    POWER_GPREGRET = 0xA8;                       /* DFU_MAGIC_OTA_RESET */
    __asm volatile("dsb");
    SCB_AIRCR = 0x05FA0004;                      /* SYSRESETREQ */
    for (;;) __asm volatile("nop");
}
