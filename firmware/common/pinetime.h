/* PineTime pins and polled drivers for test firmware, as wasp-os drives the
 * hardware: legacy SPI0 (PS 31) and legacy TWI1 (PS 33) with EVENTS polling
 * and bounded waits (a hang becomes a FAIL, not a stuck test). */
#ifndef PINETIME_H
#define PINETIME_H
#include <stdint.h>
#include "harness.h"

enum { PIN_SCK = 2, PIN_MOSI = 3, PIN_MISO = 4, PIN_NOR_CS = 5, PIN_SDA = 6, PIN_SCL = 7,
       PIN_TP_RST = 10, PIN_CHARGING = 12, PIN_BUTTON = 13, PIN_BL_LOW = 14, PIN_BUTTON_EN = 15,
       PIN_MOTOR = 16, PIN_DC = 18, PIN_POWER = 19, PIN_BL_MID = 22, PIN_BL_HIGH = 23,
       PIN_LCD_CS = 25, PIN_LCD_RST = 26, PIN_TP_INT = 28 };

#define GPIO            0x50000000u
#define GPIO_OUTSET     REG32(GPIO + 0x508)
#define GPIO_OUTCLR     REG32(GPIO + 0x50C)
#define GPIO_IN         REG32(GPIO + 0x510)
#define GPIO_DIRSET     REG32(GPIO + 0x518)
#define GPIO_PIN_CNF(n) REG32(GPIO + 0x700 + 4 * (n))

#define SPI0             0x40003000u
#define SPI_EVENTS_READY REG32(SPI0 + 0x108)
#define SPI_ENABLE       REG32(SPI0 + 0x500)
#define SPI_PSEL_SCK     REG32(SPI0 + 0x508)
#define SPI_PSEL_MOSI    REG32(SPI0 + 0x50C)
#define SPI_PSEL_MISO    REG32(SPI0 + 0x510)
#define SPI_RXD          REG32(SPI0 + 0x518)
#define SPI_TXD          REG32(SPI0 + 0x51C)
#define SPI_FREQUENCY    REG32(SPI0 + 0x524)
#define SPI_CONFIG       REG32(SPI0 + 0x554)

#define TWI1                0x40004000u
#define TWI_TASKS_STARTRX   REG32(TWI1 + 0x000)
#define TWI_TASKS_STARTTX   REG32(TWI1 + 0x008)
#define TWI_TASKS_STOP      REG32(TWI1 + 0x014)
#define TWI_TASKS_SUSPEND   REG32(TWI1 + 0x01C)
#define TWI_TASKS_RESUME    REG32(TWI1 + 0x020)
#define TWI_EVENTS_STOPPED  REG32(TWI1 + 0x104)
#define TWI_EVENTS_RXDREADY REG32(TWI1 + 0x108)
#define TWI_EVENTS_TXDSENT  REG32(TWI1 + 0x11C)
#define TWI_EVENTS_ERROR    REG32(TWI1 + 0x124)
#define TWI_EVENTS_BB       REG32(TWI1 + 0x138)
#define TWI_EVENTS_SUSPENDED REG32(TWI1 + 0x148)
#define TWI_SHORTS          REG32(TWI1 + 0x200)
#define TWI_ERRORSRC        REG32(TWI1 + 0x4C4)
#define TWI_ENABLE          REG32(TWI1 + 0x500)
#define TWI_PSEL_SCL        REG32(TWI1 + 0x508)
#define TWI_PSEL_SDA        REG32(TWI1 + 0x50C)
#define TWI_RXD             REG32(TWI1 + 0x518)
#define TWI_TXD             REG32(TWI1 + 0x51C)
#define TWI_FREQUENCY       REG32(TWI1 + 0x524)
#define TWI_ADDRESS         REG32(TWI1 + 0x588)

#define GPIOTE              0x40006000u
#define GPIOTE_EVENTS_IN(n) REG32(GPIOTE + 0x100 + 4 * (n))
#define GPIOTE_INTENSET     REG32(GPIOTE + 0x304)
#define GPIOTE_CONFIG(n)    REG32(GPIOTE + 0x510 + 4 * (n))

#define POLL_LIMIT 100000

static inline void pt_gpio_init(void) {
    GPIO_OUTSET = (1u << PIN_LCD_CS) | (1u << PIN_NOR_CS) | (1u << PIN_LCD_RST) |
                  (1u << PIN_TP_RST) | (1u << PIN_MOTOR);
    GPIO_DIRSET = (1u << PIN_LCD_CS) | (1u << PIN_DC) | (1u << PIN_LCD_RST) | (1u << PIN_NOR_CS) |
                  (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH) | (1u << PIN_SCK) |
                  (1u << PIN_MOSI) | (1u << PIN_TP_RST) | (1u << PIN_MOTOR);
}

static inline void pt_spi_init(void) {
    SPI_PSEL_SCK = PIN_SCK; SPI_PSEL_MOSI = PIN_MOSI; SPI_PSEL_MISO = PIN_MISO;
    SPI_FREQUENCY = 0x80000000u;   /* 8 Mbps */
    SPI_CONFIG = 0x6;              /* mode 3 */
    SPI_ENABLE = 1;
}

static inline uint8_t pt_spi_xfer(uint8_t b) {
    SPI_TXD = b;
    for (int i = 0; i < POLL_LIMIT && !SPI_EVENTS_READY; i++) ;
    SPI_EVENTS_READY = 0;
    return (uint8_t)SPI_RXD;
}

static inline void pt_lcd_cmd(uint8_t c, const uint8_t *data, int n) {
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(c);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < n; i++) pt_spi_xfer(data[i]);
    GPIO_OUTSET = 1u << PIN_LCD_CS;
}

static inline void pt_twi_init(void) {
    GPIO_PIN_CNF(PIN_SCL) = 0x0000060C;   /* input, connect, pull-up, S0D1 */
    GPIO_PIN_CNF(PIN_SDA) = 0x0000060C;
    TWI_PSEL_SCL = PIN_SCL; TWI_PSEL_SDA = PIN_SDA;
    TWI_FREQUENCY = 0x06680000u;          /* 400 kbps */
    TWI_ENABLE = 5;
}

static inline int pt_twi_wait(volatile uint32_t *ev) {
    for (int i = 0; i < POLL_LIMIT; i++) {
        if (*ev) { *ev = 0; return 0; }
        if (TWI_EVENTS_ERROR) return -1;
    }
    return -2;
}

static inline int pt_twi_finish(int rc) {
    if (rc) { TWI_EVENTS_ERROR = 0; TWI_TASKS_STOP = 1; }
    pt_twi_wait(&TWI_EVENTS_STOPPED);
    TWI_SHORTS = 0; TWI_ERRORSRC = TWI_ERRORSRC;
    TWI_EVENTS_ERROR = 0;
    return rc;
}

/* write reg then n bytes; 0 = ok */
static inline int pt_twi_write(uint8_t addr, uint8_t reg, const uint8_t *data, int n) {
    TWI_ADDRESS = addr; TWI_SHORTS = 0;
    TWI_EVENTS_STOPPED = 0; TWI_EVENTS_ERROR = 0; TWI_EVENTS_TXDSENT = 0;
    TWI_TXD = reg;
    TWI_TASKS_STARTTX = 1;
    int rc = pt_twi_wait(&TWI_EVENTS_TXDSENT);
    for (int i = 0; !rc && i < n; i++) {
        TWI_TXD = data[i];
        rc = pt_twi_wait(&TWI_EVENTS_TXDSENT);
    }
    if (!rc) TWI_TASKS_STOP = 1;
    return pt_twi_finish(rc);
}

/* write reg, repeated start, read n bytes (nrfx 2.0 legacy TWI sequence) */
static inline int pt_twi_read(uint8_t addr, uint8_t reg, uint8_t *buf, int n) {
    TWI_ADDRESS = addr; TWI_SHORTS = 0;
    TWI_EVENTS_STOPPED = 0; TWI_EVENTS_ERROR = 0; TWI_EVENTS_TXDSENT = 0;
    TWI_EVENTS_RXDREADY = 0;
    TWI_TXD = reg;
    TWI_TASKS_STARTTX = 1;
    int rc = pt_twi_wait(&TWI_EVENTS_TXDSENT);
    if (rc) return pt_twi_finish(rc);
    TWI_SHORTS = n == 1 ? 2 : 1;            /* BB_STOP : BB_SUSPEND */
    TWI_TASKS_RESUME = 1;
    TWI_TASKS_STARTRX = 1;
    for (int i = 0; i < n; i++) {
        rc = pt_twi_wait(&TWI_EVENTS_RXDREADY);
        if (rc) return pt_twi_finish(rc);
        if (i == n - 2) TWI_SHORTS = 2;
        buf[i] = (uint8_t)TWI_RXD;
        if (i < n - 1) TWI_TASKS_RESUME = 1;
    }
    return pt_twi_finish(0);
}
#endif
