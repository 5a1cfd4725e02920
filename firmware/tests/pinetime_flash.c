/* XT25F32B over legacy SPI0 (CS P0.05): JEDEC ID, erase, program, read, and
 * persistence: the first boot writes a record, the next boot (a new emulator
 * with the same flash file) finds it and prints BOOT2. */
#include "pinetime.h"

#define ADDR 0x1000u
static const char magic[8] = "EMUFLSH1";

static void nor_begin(void) { GPIO_OUTCLR = 1u << PIN_NOR_CS; }
static void nor_end(void) { GPIO_OUTSET = 1u << PIN_NOR_CS; }
static void nor_cmd(uint8_t c) { nor_begin(); pt_spi_xfer(c); nor_end(); }
static void nor_addr(uint8_t c, uint32_t a) {
    pt_spi_xfer(c); pt_spi_xfer(a >> 16); pt_spi_xfer(a >> 8); pt_spi_xfer(a);
}
static uint8_t nor_status(void) { nor_begin(); pt_spi_xfer(0x05); uint8_t s = pt_spi_xfer(0); nor_end(); return s; }
static int nor_wait(void) {
    int n = 0;
    while ((nor_status() & 1) && n < 200000) n++;
    return n;
}
static void nor_read(uint32_t a, uint8_t *buf, int n) {
    nor_begin(); nor_addr(0x03, a);
    for (int i = 0; i < n; i++) buf[i] = pt_spi_xfer(0);
    nor_end();
}

int main(void) {
    pt_gpio_init();
    pt_spi_init();
    nor_cmd(0xAB);                                 /* release from deep power-down */
    nor_begin(); pt_spi_xfer(0x9F);
    uint32_t id = pt_spi_xfer(0) << 16; id |= pt_spi_xfer(0) << 8; id |= pt_spi_xfer(0);
    nor_end();
    CHECK_EQ("nor_jedec_id", id, 0x0B4016);

    uint8_t buf[256];
    nor_read(ADDR, buf, 16);
    int found = 1;
    for (int i = 0; i < 8; i++) if (buf[i] != (uint8_t)magic[i]) found = 0;
    if (found) {
        semihost_puts("BOOT2\n");
        int ok = 1;
        nor_read(ADDR + 256, buf, 256);
        for (int i = 0; i < 256; i++) if (buf[i] != (uint8_t)(i * 3 + 1)) ok = 0;
        CHECK("nor_data_survived", ok);
        return harness_failures;
    }
    semihost_puts("BOOT1\n");
    /* program without WREN is ignored */
    nor_begin(); nor_addr(0x02, ADDR); pt_spi_xfer(0x00); nor_end();
    nor_wait();
    nor_read(ADDR, buf, 1);
    CHECK_EQ("nor_program_needs_wren", buf[0], 0xFF);

    nor_cmd(0x06);
    CHECK_EQ("nor_wel", nor_status() & 2, 2);
    nor_begin(); nor_addr(0x20, ADDR); nor_end();   /* sector erase */
    CHECK_EQ("nor_erase_busy", nor_status() & 1, 1);
    CHECK("nor_erase_waited", nor_wait() > 0);
    nor_read(ADDR, buf, 16);
    int erased = 1;
    for (int i = 0; i < 16; i++) if (buf[i] != 0xFF) erased = 0;
    CHECK("nor_erased", erased);

    nor_cmd(0x06);
    nor_begin(); nor_addr(0x02, ADDR + 256);
    for (int i = 0; i < 256; i++) pt_spi_xfer((uint8_t)(i * 3 + 1));
    nor_end();
    nor_wait();
    nor_cmd(0x06);
    nor_begin(); nor_addr(0x02, ADDR);
    for (int i = 0; i < 8; i++) pt_spi_xfer((uint8_t)magic[i]);
    nor_end();
    nor_wait();
    nor_read(ADDR + 256, buf, 256);
    int ok = 1;
    for (int i = 0; i < 256; i++) if (buf[i] != (uint8_t)(i * 3 + 1)) ok = 0;
    CHECK("nor_programmed", ok);
    /* one long read across more than the emulator's stream chunk (4096 bytes
     * answered in advance): the programmed page must sit at its offset */
    uint32_t start = ADDR + 256 - 4200;
    nor_begin(); nor_addr(0x03, start);
    ok = 1;
    for (uint32_t i = 0; i < 4200 + 256 + 300; i++) {
        uint8_t b = pt_spi_xfer(0);
        if (i >= 4200 && i < 4200 + 256 && b != (uint8_t)((i - 4200) * 3 + 1)) ok = 0;
        if (i >= 4200 + 256 && b != 0xFF) ok = 0;
    }
    nor_end();
    CHECK("nor_long_read", ok);
    nor_cmd(0xB9);                                 /* deep power-down */
    return harness_failures;
}
