/* PPI at the shared-ID serial slots, as Zephyr's drivers use it, and the
 * UART/UARTE byte times of the PS's BAUDRATE tables.
 *
 * 1. Zephyr's UARTE driver (uart_nrfx_uarte.c, CONFIG_UART_ASYNC_API off):
 *    a PPI channel from ENDTX to TASKS_STOPTX, then one byte from RAM and a
 *    wait for EVENTS_TXSTOPPED.  The slot 0x40002000 is UART0/UARTE0: both
 *    ends of the channel are in it.
 * 2. The byte time, measured with TIMER1 at 16 MHz: Baud115200 is
 *    0x01D7E000 = 115 942 baud on the UART (138 clocks of 16 MHz a bit) and
 *    0x01D60000 = 115 108 baud on the UARTE (139 clocks a bit).
 * 3. SPIM0 END -> PPI -> EGU0 TRIGGER[0]; EGU0 TRIGGERED[1] -> PPI -> SPIM2
 *    START; EGU0 TRIGGERED[2] -> TWIM1 STARTTX, TWIM1 ERROR (no device
 *    answers: ANACK) -> EGU0 TRIGGER[3].
 * 4. A PPI task into a disabled slot does nothing. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define U      0x40002000u
#define SPIM0  0x40003000u
#define TWIM1  0x40004000u
#define SPIM2  0x40023000u
#define TIMER1 0x40009000u
#define PPI    0x4001F000u
#define EGU0   0x40014000u

#define CH_EEP(n) (PPI + 0x510 + 8 * (n))
#define CH_TEP(n) (PPI + 0x514 + 8 * (n))

static uint8_t txbuf[4] = {'\n', '\n'};   /* blank lines on the console */
static uint8_t spibuf[4] = {1, 2, 3, 4};
static uint8_t spirx[4];

/* Polls ``addr`` until it reads non-zero; returns the 16 MHz ticks TIMER1
 * counted since it was cleared (0 on time-out). */
static uint32_t wait_set(uint32_t addr) {
    for (int n = 0; n < 20000; n++) {       /* ~3 ms */
        if (REG32(addr)) {
            REG32(TIMER1 + 0x040) = 1;             /* CAPTURE[0] */
            return REG32(TIMER1 + 0x540);
        }
    }
    return 0;
}

static void timer_restart(void) {
    REG32(TIMER1 + 0x00C) = 1;                     /* CLEAR */
    REG32(TIMER1 + 0x000) = 1;                     /* START */
}

int main(void) {
    REG32(TIMER1 + 0x504) = 0;                     /* timer mode */
    REG32(TIMER1 + 0x508) = 3;                     /* 32 bit */
    REG32(TIMER1 + 0x510) = 0;                     /* 16 MHz */

    /* -- 1. UARTE ENDTX -> PPI -> STOPTX (Zephyr) ------------------------ */
    REG32(U + 0x50C) = 6; REG32(U + 0x514) = 8;     /* PSEL.TXD, PSEL.RXD */
    REG32(U + 0x524) = 0x01D60000u;                 /* UARTE Baud115200 */
    REG32(U + 0x500) = 8;                           /* ENABLE: UARTE */
    REG32(CH_EEP(0)) = U + 0x120;                   /* EVENTS_ENDTX */
    REG32(CH_TEP(0)) = U + 0x00C;                   /* TASKS_STOPTX */
    REG32(PPI + 0x504) = 1u << 0;                   /* CHENSET */
    REG32(U + 0x544) = (uint32_t)txbuf; REG32(U + 0x548) = 1;
    timer_restart();
    REG32(U + 0x008) = 1;                           /* STARTTX */
    uint32_t t = wait_set(U + 0x158);               /* EVENTS_TXSTOPPED */
    CHECK("uarte TXSTOPPED through PPI from ENDTX", t != 0);
    CHECK_EQ("uarte ENDTX", REG32(U + 0x120), 1);
    CHECK_EQ("uarte TXD.AMOUNT", REG32(U + 0x54C), 1);
    /* 10 bits of 139 clocks, plus the polling loop's few cycles */
    CHECK("uarte 115108 baud: a byte in 1390 ticks of 16 MHz", t >= 1390 && t <= 1394);
    REG32(PPI + 0x508) = 1u << 0;                   /* CHENCLR */
    REG32(U + 0x120) = 0; REG32(U + 0x158) = 0;

    /* a second byte with the channel off: no TXSTOPPED */
    REG32(U + 0x544) = (uint32_t)txbuf + 1;
    REG32(U + 0x008) = 1;
    CHECK("uarte ENDTX again", wait_set(U + 0x120) != 0);
    CHECK_EQ("uarte no TXSTOPPED with the channel off", REG32(U + 0x158), 0);
    REG32(U + 0x00C) = 1;                           /* STOPTX by the CPU */
    CHECK_EQ("uarte TXSTOPPED from the CPU", REG32(U + 0x158), 1);
    REG32(U + 0x500) = 0;

    /* -- 2. the legacy UART's byte time --------------------------------- */
    REG32(U + 0x524) = 0x01D7E000u;                 /* UART Baud115200 */
    REG32(U + 0x500) = 4;                           /* ENABLE: UART */
    REG32(U + 0x11C) = 0;
    REG32(U + 0x008) = 1;                           /* STARTTX */
    timer_restart();
    REG32(U + 0x51C) = '\n';                        /* TXD */
    t = wait_set(U + 0x11C);                        /* TXDRDY */
    CHECK("uart 115942 baud: a byte in 1380 ticks of 16 MHz", t >= 1380 && t <= 1384);
    REG32(U + 0x00C) = 1;
    REG32(U + 0x500) = 0;

    /* -- 3. SPIM and TWIM events and tasks through PPI -------------------- */
    REG32(SPIM0 + 0x524) = 0x80000000u;             /* M8 */
    REG32(SPIM0 + 0x544) = (uint32_t)spibuf; REG32(SPIM0 + 0x548) = 2;
    REG32(SPIM0 + 0x534) = (uint32_t)spirx; REG32(SPIM0 + 0x538) = 0;
    REG32(SPIM0 + 0x500) = 7;                       /* ENABLE: SPIM */
    REG32(SPIM2 + 0x524) = 0x80000000u;
    REG32(SPIM2 + 0x544) = (uint32_t)spibuf; REG32(SPIM2 + 0x548) = 1;
    REG32(SPIM2 + 0x534) = (uint32_t)spirx; REG32(SPIM2 + 0x538) = 1;
    REG32(SPIM2 + 0x500) = 7;
    REG32(TWIM1 + 0x588) = 0x55;                    /* nobody at 0x55 */
    REG32(TWIM1 + 0x524) = 0x06400000u;             /* K400 */
    REG32(TWIM1 + 0x544) = (uint32_t)spibuf; REG32(TWIM1 + 0x548) = 1;
    REG32(TWIM1 + 0x500) = 6;                       /* ENABLE: TWIM */
    REG32(CH_EEP(1)) = SPIM0 + 0x118;               /* SPIM0 EVENTS_END */
    REG32(CH_TEP(1)) = EGU0 + 4 * 0;                /* EGU0 TRIGGER[0] */
    REG32(CH_EEP(2)) = EGU0 + 0x100 + 4 * 1;        /* EGU0 TRIGGERED[1] */
    REG32(CH_TEP(2)) = SPIM2 + 0x010;               /* SPIM2 TASKS_START */
    REG32(CH_EEP(3)) = EGU0 + 0x100 + 4 * 2;        /* EGU0 TRIGGERED[2] */
    REG32(CH_TEP(3)) = TWIM1 + 0x008;               /* TWIM1 TASKS_STARTTX */
    REG32(CH_EEP(4)) = TWIM1 + 0x124;               /* TWIM1 EVENTS_ERROR */
    REG32(CH_TEP(4)) = EGU0 + 4 * 3;                /* EGU0 TRIGGER[3] */
    REG32(PPI + 0x504) = 0x1Eu;                     /* channels 1-4 */

    REG32(SPIM0 + 0x010) = 1;                       /* START */
    CHECK("spim0 END", wait_set(SPIM0 + 0x118) != 0);
    CHECK_EQ("spim0 END -> egu0 TRIGGERED[0]", REG32(EGU0 + 0x100), 1);

    REG32(EGU0 + 4 * 1) = 1;                        /* TRIGGER[1] -> SPIM2 START */
    CHECK("egu0 TRIGGERED[1] -> spim2 START -> END", wait_set(SPIM2 + 0x118) != 0);
    CHECK_EQ("spim2 RXD.AMOUNT", REG32(SPIM2 + 0x53C), 1);

    REG32(EGU0 + 4 * 2) = 1;                        /* TRIGGER[2] -> TWIM1 STARTTX */
    CHECK_EQ("twim1 TXSTARTED from PPI", REG32(TWIM1 + 0x150), 1);
    CHECK("twim1 ERROR (ANACK)", wait_set(TWIM1 + 0x124) != 0);
    CHECK_EQ("twim1 ERROR -> egu0 TRIGGERED[3]", REG32(EGU0 + 0x10C), 1);
    REG32(TWIM1 + 0x014) = 1;                       /* STOP */

    /* -- 4. a PPI task into a disabled slot ----------------------------- */
    REG32(SPIM2 + 0x118) = 0;
    REG32(SPIM2 + 0x500) = 0;                       /* SPIM2 off */
    REG32(EGU0 + 4 * 1) = 1;
    for (volatile int i = 0; i < 2000; i++) ;
    CHECK_EQ("no END from a disabled slot", REG32(SPIM2 + 0x118), 0);
    REG32(PPI + 0x508) = 0x1Eu;
    return harness_failures;
}
