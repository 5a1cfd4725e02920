/* A busy PineTime firmware for the snapshot tests (tests/machine/test_snapshot.py):
 * at almost any instant something is in flight, so a snapshot taken "at a
 * random moment" catches state in every model.
 *  - SPIM0 with EasyDMA draws moving rectangles on the ST7789, driven by
 *    its END interrupt (a state machine: command byte, parameters, pixel
 *    chunks of 240 bytes), so a DMA transfer is nearly always in progress;
 *  - RTC1 COMPARE[0] every 8 LFCLK ticks (IRQ, priority 3) starts frames;
 *  - TIMER0 at 1 MHz, COMPARE[0] every 700 us with the COMPARE0_CLEAR short
 *    (IRQ, priority 1, preempts the others), COMPARE[1] through PPI toggles
 *    P0.17 with GPIOTE;
 *  - SysTick at 1 kHz (priority 4) counts milliseconds;
 *  - the main loop reads the BMA421 chip id over legacy TWI1, does FPU work,
 *    prints a status line on ITM port 0 and sleeps in WFI.
 * It never exits. */
#include <stdint.h>
#include "harness.h"
#include "cm4.h"
#include "pinetime.h"

#define SPIM0_BASE 0x40003000u
#define SPIM(o) REG32(SPIM0_BASE + (o))
#define RTC1_BASE 0x40011000u
#define RTC1(o) REG32(RTC1_BASE + (o))
#define TIMER0_BASE 0x40008000u
#define TIMER0(o) REG32(TIMER0_BASE + (o))
#define PPI(o) REG32(0x4001F000u + (o))
#define CLOCK(o) REG32(0x40000000u + (o))
#define PIN_TOGGLE 17

static volatile uint32_t ms, rtc_ticks, t0_ticks, frames, chunks, busy;
static volatile float acc = 1.0f;
static uint8_t cmd_buf[8];
static uint8_t pixels[240];
static int step, remaining, fx, fy;

static void itm_puts(const char *s) { while (*s) ITM_PORT0 = (uint8_t)*s++; }
static void itm_dec(uint32_t v) {
    char b[12]; int i = 11; b[i] = 0;
    do { b[--i] = '0' + v % 10; v /= 10; } while (v);
    itm_puts(&b[i]);
}

static void spim_send(const uint8_t *p, int n, int data) {
    if (data) GPIO_OUTSET = 1u << PIN_DC; else GPIO_OUTCLR = 1u << PIN_DC;
    SPIM(0x544) = (uint32_t)p;    /* TXD.PTR */
    SPIM(0x548) = n;              /* TXD.MAXCNT */
    SPIM(0x538) = 0;              /* RXD.MAXCNT */
    SPIM(0x010) = 1;              /* TASKS_START */
}

static void frame_step(void) {
    switch (step++) {
    case 0: GPIO_OUTCLR = 1u << PIN_LCD_CS; cmd_buf[0] = 0x2A; spim_send(cmd_buf, 1, 0); break;
    case 1: cmd_buf[0] = 0; cmd_buf[1] = fx; cmd_buf[2] = 0; cmd_buf[3] = fx + 39;
            spim_send(cmd_buf, 4, 1); break;
    case 2: cmd_buf[4] = 0x2B; spim_send(cmd_buf + 4, 1, 0); break;
    case 3: cmd_buf[0] = 0; cmd_buf[1] = fy; cmd_buf[2] = 0; cmd_buf[3] = fy + 39;
            spim_send(cmd_buf, 4, 1); break;
    case 4: cmd_buf[4] = 0x2C; spim_send(cmd_buf + 4, 1, 0); remaining = 40 * 40 * 2; break;
    default:
        if (remaining > 0) {
            int n = remaining > 240 ? 240 : remaining;
            uint16_t c = (uint16_t)(frames * 0x0841u + chunks * 0x1003u);
            for (int i = 0; i < n; i += 2) { pixels[i] = c >> 8; pixels[i + 1] = c & 0xFF; }
            remaining -= n;
            chunks++;
            spim_send(pixels, n, 1);
        } else {
            GPIO_OUTSET = 1u << PIN_LCD_CS;
            frames++;
            busy = 0;
        }
    }
}

void IRQ3_Handler(void) {            /* SPIM0: END */
    if (SPIM(0x118)) { SPIM(0x118) = 0; frame_step(); }
}

void IRQ17_Handler(void) {           /* RTC1: COMPARE[0] */
    RTC1(0x140) = 0;
    RTC1(0x540) = (RTC1(0x504) + 8) & 0xFFFFFF;
    rtc_ticks++;
    if (!busy) {
        busy = 1;
        step = 0;
        fx = (frames * 37) % 200;
        fy = (frames * 53) % 200;
        frame_step();
    }
}

void IRQ8_Handler(void) {            /* TIMER0: COMPARE[0] */
    TIMER0(0x140) = 0;
    t0_ticks++;
    acc = acc * 1.0001f + 0.5f;
}

void SysTick_Handler(void) { ms++; }

int main(void) {
    pt_gpio_init();
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH);
    pt_spi_init();
    GPIO_OUTCLR = 1u << PIN_LCD_RST; for (volatile int i = 0; i < 200; i++) ;
    GPIO_OUTSET = 1u << PIN_LCD_RST;
    pt_lcd_cmd(0x11, 0, 0);                       /* SLPOUT */
    uint8_t colmod = 0x05; pt_lcd_cmd(0x3A, &colmod, 1);
    pt_lcd_cmd(0x21, 0, 0);                       /* INVON */
    pt_lcd_cmd(0x29, 0, 0);                       /* DISPON */
    SPI_ENABLE = 0;
    SPIM(0x500) = 7;                              /* SPIM0 (PSELs carry over) */
    SPIM(0x524) = 0x80000000u;                    /* 8 Mbps */
    SPIM(0x304) = 1u << 6;                        /* INTENSET END */
    NVIC_IPR8(3) = 2 << 5; NVIC_ISER(0) = 1u << 3;

    CLOCK(0x008) = 1;                             /* LFCLKSTART */
    while (!CLOCK(0x104)) ;
    RTC1(0x540) = 8;                              /* CC[0] */
    RTC1(0x304) = 1u << 16;                       /* INTENSET COMPARE0 */
    NVIC_IPR8(17) = 3 << 5; NVIC_ISER(0) = 1u << 17;
    RTC1(0x000) = 1;

    GPIOTE_CONFIG(0) = 3 | (PIN_TOGGLE << 8) | (3 << 16);   /* task, toggle */
    TIMER0(0x504) = 0;                            /* timer mode */
    TIMER0(0x508) = 3;                            /* 32 bit */
    TIMER0(0x510) = 4;                            /* 1 MHz */
    TIMER0(0x540) = 700;                          /* CC[0] */
    TIMER0(0x544) = 350;                          /* CC[1] -> PPI */
    TIMER0(0x200) = 1;                            /* COMPARE0_CLEAR */
    TIMER0(0x304) = 1u << 16;
    PPI(0x510) = TIMER0_BASE + 0x144;             /* CH[0].EEP = COMPARE[1] */
    PPI(0x514) = 0x40006000u;                     /* CH[0].TEP = GPIOTE TASKS_OUT[0] */
    PPI(0x504) = 1;                               /* CHENSET */
    NVIC_IPR8(8) = 1 << 5; NVIC_ISER(0) = 1u << 8;
    TIMER0(0x000) = 1;

    SYST_RVR = 64000 - 1; SYST_CVR = 0; SCB_SHPR8(15) = 4 << 5; SYST_CSR = 7;
    DEMCR |= 1u << 24; DWT_CTRL |= 1;              /* CYCCNT on */

    pt_twi_init();
    uint32_t last = 0;
    for (;;) {
        if (ms - last >= 25) {
            last = ms;
            uint8_t id = 0;
            int rc = pt_twi_read(0x18, 0x00, &id, 1);
            itm_puts("ms="); itm_dec(ms); itm_puts(" rtc="); itm_dec(rtc_ticks);
            itm_puts(" t0="); itm_dec(t0_ticks); itm_puts(" frames="); itm_dec(frames);
            itm_puts(" id="); itm_dec(rc ? 999 : id); itm_puts(" acc=");
            itm_dec((uint32_t)acc); itm_puts(" cyc="); itm_dec(DWT_CYCCNT); itm_puts("\n");
        }
        __asm volatile("wfi");
    }
}
