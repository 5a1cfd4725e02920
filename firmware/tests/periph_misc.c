/* RNG (interrupt), TEMP (polled), ECB (FIPS-197 vector), GPIO SENSE/LATCH ->
 * GPIOTE PORT (the Python test drives P0.13 low after the firmware arms it). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RNG    0x4000D000u
#define TEMP   0x4000C000u
#define ECB    0x4000E000u
#define GPIOTE 0x40006000u
#define P0     0x50000000u

static volatile uint32_t rng_bytes[8], n_rng, port_irqs;
volatile uint32_t armed;                 /* the Python test waits for this */

void IRQ13_Handler(void) {
    REG32(RNG + 0x100) = 0; (void)REG32(RNG + 0x100);
    if (n_rng < 8) rng_bytes[n_rng++] = REG32(RNG + 0x508);
    if (n_rng == 8) REG32(RNG + 0x004) = 1;             /* STOP */
}
void IRQ6_Handler(void) {
    if (REG32(GPIOTE + 0x17C)) { REG32(GPIOTE + 0x17C) = 0; (void)REG32(GPIOTE + 0x17C); port_irqs++; }
}

static uint8_t ecb_data[48] __attribute__((aligned(4))) = {
    0x00,0x01,0x02,0x03,0x04,0x05,0x06,0x07,0x08,0x09,0x0a,0x0b,0x0c,0x0d,0x0e,0x0f,
    0x00,0x11,0x22,0x33,0x44,0x55,0x66,0x77,0x88,0x99,0xaa,0xbb,0xcc,0xdd,0xee,0xff,
};
static const uint8_t ecb_want[16] = {
    0x69,0xc4,0xe0,0xd8,0x6a,0x7b,0x04,0x30,0xd8,0xcd,0xb7,0x80,0x70,0xb4,0xc5,0x5a};

int main(void) {
    REG32(RNG + 0x504) = 1;              /* DERCEN */
    REG32(RNG + 0x304) = 1;
    irq_enable(13);
    REG32(RNG + 0x000) = 1;
    while (n_rng < 8) __asm volatile("wfi");
    int distinct = 0;
    for (int i = 1; i < 8; i++) if (rng_bytes[i] != rng_bytes[0]) distinct++;
    CHECK("rng values vary", distinct > 0);
    CHECK("rng bytes", rng_bytes[7] <= 0xFF);

    REG32(TEMP + 0x000) = 1;
    while (!REG32(TEMP + 0x100)) { }
    REG32(TEMP + 0x100) = 0;
    CHECK_EQ("temp 25C in quarter degrees", REG32(TEMP + 0x508), 100);

    REG32(ECB + 0x504) = (uint32_t)ecb_data;
    REG32(ECB + 0x000) = 1;
    while (!REG32(ECB + 0x100) && !REG32(ECB + 0x104)) { }
    CHECK_EQ("ecb no error", REG32(ECB + 0x104), 0);
    int ok = 1;
    for (int i = 0; i < 16; i++) if (ecb_data[32 + i] != ecb_want[i]) ok = 0;
    CHECK("ecb fips-197 vector", ok);

    /* P0.13 input, pull-up, SENSE=Low; GPIOTE PORT interrupt */
    REG32(P0 + 0x700 + 4 * 13) = (3 << 2) | (3 << 16);
    REG32(P0 + 0x520) = 0xFFFFFFFF;      /* clear LATCH */
    REG32(GPIOTE + 0x17C) = 0;
    REG32(GPIOTE + 0x304) = 1u << 31;
    irq_enable(6);
    /* race-free sleep: check with interrupts masked; WFI still wakes on a
     * pending interrupt, which is taken once PRIMASK is cleared */
    __asm volatile("cpsid i" ::: "memory");
    armed = 1;
    while (!port_irqs) {
        __asm volatile("wfi");
        __asm volatile("cpsie i\n isb\n cpsid i" ::: "memory");
    }
    __asm volatile("cpsie i" ::: "memory");
    CHECK_EQ("port irq", port_irqs, 1);
    CHECK_EQ("latch p0.13", REG32(P0 + 0x520), 1u << 13);
    CHECK_EQ("in p0.13 low", (REG32(P0 + 0x510) >> 13) & 1, 0);
    return harness_failures;
}
