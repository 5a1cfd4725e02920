/* NVMC the way nrfx_nvmc does it: erase a flash page, write words (bits only
 * clear), writes ignored without WEN, erase and program UICR.  (Running from
 * flash, the CPU waits for each operation: periph_nvmc_stall.c.) */
#include "harness.h"
HARNESS_STATE

#define NVMC_READY     REG32(0x4001E400)
#define NVMC_CONFIG    REG32(0x4001E504)
#define NVMC_ERASEPAGE REG32(0x4001E508)
#define NVMC_ERASEUICR REG32(0x4001E514)
#define PAGE_ADDR 0x0007F000u
#define UICR_CUSTOMER0 REG32(0x10001080)

static void wait_ready(void) { while (!NVMC_READY) { } }

int main(void) {
    volatile uint32_t *w = (volatile uint32_t *)PAGE_ADDR;
    CHECK_EQ("ready idle", NVMC_READY, 1);
    NVMC_CONFIG = 2;                       /* Een */
    NVMC_ERASEPAGE = PAGE_ADDR;
    CHECK_EQ("ready after the erase (the CPU waited: runs from flash)", NVMC_READY, 1);
    wait_ready();
    CHECK_EQ("erased", w[0], 0xFFFFFFFF);
    NVMC_CONFIG = 1;                       /* Wen */
    w[0] = 0x12345678;
    wait_ready();
    CHECK_EQ("written", w[0], 0x12345678);
    w[0] = 0xFFFF00FF;                     /* can only clear bits */
    wait_ready();
    CHECK_EQ("bits only clear", w[0], 0x12340078);
    w[1] = 0xA5A5A5A5;
    wait_ready();
    NVMC_CONFIG = 0;                       /* Ren: writes ignored */
    w[2] = 0;
    CHECK_EQ("write without WEN ignored", w[2], 0xFFFFFFFF);
    CHECK_EQ("second word", w[1], 0xA5A5A5A5);
    NVMC_CONFIG = 2;
    NVMC_ERASEUICR = 1;
    wait_ready();
    CHECK_EQ("uicr erased", UICR_CUSTOMER0, 0xFFFFFFFF);
    NVMC_CONFIG = 1;
    UICR_CUSTOMER0 = 0xCAFEF00D;
    wait_ready();
    NVMC_CONFIG = 0;
    CHECK_EQ("uicr programmed", UICR_CUSTOMER0, 0xCAFEF00D);
    return harness_failures;
}
