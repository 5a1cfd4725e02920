/* BMA421 and HRS3300 on TWI1 through their registers: the BMA421 config-file
 * burst + INIT_CTRL, step counter; HRS3300 ID, enable, PPG samples every
 * 40 ms (SysTick + WFI) for 10.24 s and a peak-counting heart rate.
 * Prints READY (the test then sets steps and bpm), then STEPS n, BPM n. */
#include "pinetime.h"

#define N 256
static uint8_t config[6144];
static uint32_t samples[N];
static volatile uint32_t ticks;
void SysTick_Handler(void) { ticks++; }

static uint8_t rd8(uint8_t a, uint8_t r) { uint8_t v = 0xEE; pt_twi_read(a, r, &v, 1); return v; }
static void wr8(uint8_t a, uint8_t r, uint8_t v) { pt_twi_write(a, r, &v, 1); }

int main(void) {
    pt_gpio_init();
    pt_twi_init();
    CHECK_EQ("bma_chip_id", rd8(0x18, 0x00), 0x11);
    wr8(0x18, 0x7C, 0x00);                        /* PWR_CONF: no power save */
    wr8(0x18, 0x59, 0x00);                        /* INIT_CTRL = 0 */
    for (int i = 0; i < (int)sizeof config; i++) config[i] = (uint8_t)(i * 5);
    wr8(0x18, 0x5B, 0); wr8(0x18, 0x5C, 0);
    CHECK_EQ("bma_config_burst", pt_twi_write(0x18, 0x5E, config, sizeof config), 0);
    wr8(0x18, 0x59, 0x01);
    CHECK_EQ("bma_internal_status", rd8(0x18, 0x2A), 0x01);
    wr8(0x18, 0x7D, 0x04);                        /* PWR_CTRL: acc_en */

    CHECK_EQ("hrs_id", rd8(0x44, 0x00), 0x21);
    wr8(0x44, 0x01, 0x80 | (6 << 4));            /* HEN, 12.5 ms wait */
    semihost_puts("READY\n");

    REG32(0xE000E014) = 64000000 / 25 - 1;        /* 40 ms */
    REG32(0xE000E018) = 0;
    REG32(0xE000E010) = 7;
    uint32_t sum = 0, max = 0;
    for (int i = 0; i < N; i++) {
        uint32_t t = ticks;
        while (ticks == t) __asm volatile("wfi");
        uint8_t m = rd8(0x44, 0x09), h = rd8(0x44, 0x0A), l = rd8(0x44, 0x0F);
        uint32_t v = ((uint32_t)(l & 0x30) << 12) | ((uint32_t)m << 8) | ((h & 0x0F) << 4) | (l & 0x0F);
        samples[i] = v; sum += v; if (v > max) max = v;
    }
    uint32_t mean = sum / N, thr = mean + (max - mean) / 2;
    int rises = 0;
    for (int i = 1; i < N; i++) if (samples[i] > thr && samples[i - 1] <= thr) rises++;
    uint8_t s[4];
    pt_twi_read(0x18, 0x1E, s, 4);
    semihost_puts("STEPS "); put_dec(s[0] | s[1] << 8 | s[2] << 16 | (uint32_t)s[3] << 24);
    semihost_puts("\nBPM "); put_dec(rises * 60000 / (N * 40)); semihost_puts("\n");
    CHECK("sensors_done", 1);
    return harness_failures;
}
