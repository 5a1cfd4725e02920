/* The CCM and the AAR (shared slot 0x4000F000, IRQ 15) driven the way
 * NimBLE's nRF52 PHY drives them, checked against the Bluetooth Core
 * specification's sample data (Vol 6 Part C 1 "Encryption sample data" and
 * Vol 3 Part H 2.2.2's ah() sample).
 *   1. CCM on transmit (ble_phy_tx): AAR disabled, CCM enabled, the CCM data
 *      structure as NimBLE's struct nrf_ccm_data, MODE = Extended length,
 *      encryption, SHORTS ENDKSGEN_CRYPT; KSGEN through PPI (as fixed channel
 *      24 from RADIO READY would).  The sample's two LL_START_ENC_RSP and its
 *      first 27-octet data packet must come out as the specification prints
 *      them; ENDKSGEN within a radio ramp-up, ENDCRYPT the packet's air time
 *      after it (1 Mbit);
 *   2. CCM on receive (ble_phy_rx_xcvr_setup): decryption at 2 Mbit, KSGEN
 *      by the CPU, CRYPT through PPI (as fixed channel 25 from RADIO ADDRESS
 *      would): the data packet decrypts, MICSTATUS 1, ENDCRYPT interrupt;
 *      a tampered packet and a wrong packet counter give MICSTATUS 0;
 *   3. an empty packet passes without MIC; a pointer outside RAM is an ERROR;
 *   4. AAR (the scanner's privacy path): an address generated with the ECB
 *      from the specification's IRK, put at index 2 of 3, resolves with
 *      STATUS 2; a wrong hash and a NIRK that leaves the IRK out do not.
 * Times come from TIMER0 at 16 MHz, captured through PPI. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define SLOT   0x4000F000u
#define ECB    0x4000E000u
#define TIMER0 0x40008000u
#define PPI    0x4001F000u
#define C(off) REG32(SLOT + (off))
#define T(off) REG32(TIMER0 + (off))
#define P(off) REG32(PPI + (off))

#define MODE_DECRYPT  1u
#define MODE_2MBIT    (1u << 16)
#define MODE_EXTENDED (1u << 24)
#define TICKS_US      16u                 /* TIMER0 at 16 MHz */

/* A task started through PPI from a TIMER0 compare starts when the CPU's
 * block reaches that instant: up to two 16 MHz ticks after it. */
#define CHECK_PPI_TIME(name, got, want) do { uint32_t g_ = (got), w_ = (want); \
    if (g_ - w_ <= 2) { semihost_puts("PASS " name "\n"); } \
    else { harness_failures++; semihost_puts("FAIL " name ": got "); put_hex(g_); \
           semihost_puts(" want "); put_hex(w_); semihost_puts(" (+2)\n"); } } while (0)

/* NimBLE's struct nrf_ccm_data */
struct ccm_data {
    uint8_t key[16];
    uint64_t pkt_counter;
    uint8_t dir_bit;
    uint8_t iv[8];
} __attribute__((packed));

static struct ccm_data cnf;
static uint8_t plain[40], enc[40], dec[40];  /* header, length, RFU, payload (+MIC) */
static uint32_t scratch[67];
static uint32_t aar_scratch;
static uint8_t irks[3][16];
static uint8_t adv[12], ecb_data[48];
static volatile uint32_t irq_count, irq_saw_endcrypt;

/* Core spec Vol 6 Part C 1: SK and IV = IVm || IVs as the LL sends them */
static const uint8_t SK[16] = {0x99, 0xAD, 0x1B, 0x52, 0x26, 0xA3, 0x7E, 0x3E,
                               0x05, 0x8E, 0x3B, 0x8E, 0x27, 0xC2, 0xC6, 0x66};
static const uint8_t IV[8] = {0x24, 0xAB, 0xDC, 0xBA, 0xBE, 0xBA, 0xAF, 0xDE};
static const uint8_t START_ENC_RSP1[5] = {0x9F, 0xCD, 0xA7, 0xF4, 0x48};
static const uint8_t START_ENC_RSP2[5] = {0xA3, 0x4C, 0x13, 0xA4, 0x15};
static const uint8_t DATA1[27] = {0x17, 0x00, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
                                  0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x70, 0x71, 0x31,
                                  0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x30};
static const uint8_t DATA1_ENC[31] = {0x7A, 0x70, 0xD6, 0x64, 0x15, 0x22, 0x6D, 0xF2,
                                      0x6B, 0x17, 0x83, 0x9A, 0x06, 0x04, 0x05, 0x59,
                                      0x6B, 0xD6, 0x56, 0x4F, 0x79, 0x6B, 0x5B, 0x9C,
                                      0xE6, 0xFF, 0x32, 0xF7, 0x5A, 0x6D, 0x33};
/* Core spec Vol 3 Part H 2.2.2 sample: IRK (MSO first), prand 0x708194, ah = 0x0DFBAA */
static const uint8_t SPEC_IRK[16] = {0xEC, 0x02, 0x34, 0xA3, 0x57, 0xC8, 0xAD, 0x05,
                                     0x34, 0x10, 0x10, 0xA6, 0x0A, 0x39, 0x7D, 0x9B};

void IRQ15_Handler(void) {
    irq_count++;
    irq_saw_endcrypt = C(0x104);
    C(0x308) = 0xFFFFFFFFu;                     /* INTENCLR: the line drops */
}

static int wait_reg(uint32_t addr, uint32_t limit) {
    uint32_t n = 0;
    while (!REG32(addr) && n < limit) n++;
    return REG32(addr) != 0;
}

static int same(const uint8_t *a, const uint8_t *b, int n) {
    for (int i = 0; i < n; i++) if (a[i] != b[i]) return 0;
    return 1;
}

/* Trigger the slot's task at `task` through PPI channel 2 from TIMER0
 * COMPARE[2], `us` from now; returns the timer value it fires at. */
static uint32_t task_by_ppi(uint32_t task, uint32_t us) {
    P(0x514 + 8 * 2) = SLOT + task;             /* CH[2].TEP */
    T(0x040 + 4 * 3) = 1;                       /* CAPTURE[3]: now */
    uint32_t at = T(0x540 + 4 * 3) + us * TICKS_US;
    T(0x148) = 0;
    T(0x540 + 4 * 2) = at;                      /* CC[2] */
    wait_reg(TIMER0 + 0x148, 100000);
    return at;
}

static void clear_events(void) {
    C(0x100) = 0; C(0x104) = 0; C(0x108) = 0;
}

/* ble_phy_tx: encrypt `plain` into `enc`, KSGEN -> (SHORTS) CRYPT.
 * *ks = KSGEN to ENDKSGEN, *cr = ENDKSGEN to ENDCRYPT (timer ticks). */
static void encrypt(uint32_t counter, uint8_t dir, uint32_t *ks, uint32_t *cr) {
    cnf.pkt_counter = counter;
    cnf.dir_bit = dir;
    C(0x200) = 1;                               /* SHORTS ENDKSGEN_CRYPT */
    C(0x50C) = (uint32_t)plain;                 /* INPTR */
    C(0x510) = (uint32_t)enc;                   /* OUTPTR */
    C(0x514) = (uint32_t)scratch;               /* SCRATCHPTR */
    clear_events();
    C(0x504) = MODE_EXTENDED;                   /* encryption, 1 Mbit */
    C(0x508) = (uint32_t)&cnf;                  /* CNFPTR */
    uint32_t t0 = task_by_ppi(0x000, 10);       /* KSGEN */
    wait_reg(SLOT + 0x104, 200000);
    *ks = T(0x540) - t0;                        /* CC[0] at ENDKSGEN */
    *cr = T(0x544) - T(0x540);                  /* CC[1] at ENDCRYPT */
}

/* ble_phy_rx_xcvr_setup: decrypt `enc` into `dec` at 2 Mbit; KSGEN by the
 * CPU, CRYPT through PPI.  *cr = CRYPT to ENDCRYPT. */
static void decrypt(uint32_t counter, uint8_t dir, uint32_t *cr) {
    cnf.pkt_counter = counter;
    cnf.dir_bit = dir;
    C(0x50C) = (uint32_t)enc;
    C(0x510) = (uint32_t)dec;
    C(0x514) = (uint32_t)scratch;
    C(0x504) = MODE_EXTENDED | MODE_DECRYPT | MODE_2MBIT;
    C(0x508) = (uint32_t)&cnf;
    C(0x200) = 0;
    clear_events();
    C(0x000) = 1;                               /* TASKS_KSGEN */
    /* CRYPT as RADIO ADDRESS would: after ramp-up, preamble and address */
    uint32_t t0 = task_by_ppi(0x004, 80);
    wait_reg(SLOT + 0x104, 200000);
    *cr = T(0x544) - t0;
}

static void set_plain(uint8_t header, const uint8_t *payload, int n) {
    plain[0] = header; plain[1] = n; plain[2] = 0;
    for (int i = 0; i < n; i++) plain[3 + i] = payload[i];
}

int main(void) {
    uint32_t ks, cr;
    /* TIMER0: 16 MHz, 32 bit, started; PPI: ENDKSGEN/END -> CAPTURE[0],
     * ENDCRYPT -> CAPTURE[1], COMPARE[2] -> a task of the slot */
    T(0x504) = 0; T(0x508) = 3; T(0x510) = 0; T(0x000) = 1;
    P(0x510 + 8 * 0) = SLOT + 0x100; P(0x514 + 8 * 0) = TIMER0 + 0x040;
    P(0x510 + 8 * 1) = SLOT + 0x104; P(0x514 + 8 * 1) = TIMER0 + 0x044;
    P(0x510 + 8 * 2) = TIMER0 + 0x148;
    P(0x504) = 7;                               /* CHENSET 0-2 */

    /* ble_phy_init / ble_phy_encrypt_enable */
    C(0x308) = 0xFFFFFFFFu;
    CHECK_EQ("MODE reset value", C(0x504), 1);
    for (int i = 0; i < 16; i++) cnf.key[i] = SK[i];
    for (int i = 0; i < 8; i++) cnf.iv[i] = IV[i];
    C(0x500) = 0;                               /* NRF_AAR->ENABLE = Disabled */
    C(0x500) = 2;                               /* NRF_CCM->ENABLE = Enabled */
    CHECK_EQ("ENABLE reads CCM", C(0x500), 2);

    /* 1. transmit: the specification's packets */
    set_plain(0x0F, (const uint8_t *)"\x06", 1);          /* LL_START_ENC_RSP, central */
    encrypt(0, 1, &ks, &cr);
    CHECK_EQ("ENDKSGEN", C(0x100), 1);
    CHECK_EQ("ENDCRYPT", C(0x104), 1);
    CHECK_EQ("no ERROR", C(0x108), 0);
    CHECK_EQ("encrypted header", enc[0], 0x0F);
    CHECK_EQ("encrypted length = 1 + MIC", enc[1], 5);
    CHECK("spec LL_START_ENC_RSP1 (counter 0, central to peripheral)",
          same(&enc[3], START_ENC_RSP1, 5));
    CHECK("key stream within a radio ramp-up (40 us)", ks > 0 && ks < 40 * TICKS_US);
    CHECK_EQ("ENDKSGEN to ENDCRYPT = header, length, payload, MIC at 1 Mbit",
             cr, (2 + 5) * 8 * TICKS_US);

    set_plain(0x07, (const uint8_t *)"\x06", 1);          /* LL_START_ENC_RSP, peripheral */
    encrypt(0, 0, &ks, &cr);
    CHECK("spec LL_START_ENC_RSP2 (counter 0, peripheral to central)",
          enc[1] == 5 && same(&enc[3], START_ENC_RSP2, 5));

    set_plain(0x0E, DATA1, 27);                           /* LLID 2: L2CAP start */
    encrypt(1, 1, &ks, &cr);
    CHECK_EQ("data packet length 27 + MIC", enc[1], 31);
    CHECK("spec data packet (counter 1, central to peripheral)", same(&enc[3], DATA1_ENC, 31));
    CHECK_EQ("data packet air time at 1 Mbit", cr, (2 + 31) * 8 * TICKS_US);

    /* 2. receive: decrypt it back, with the ENDCRYPT interrupt */
    irq_count = 0;
    irq_prio(15, 0x40);
    irq_enable(15);
    C(0x304) = 1u << 1;                                   /* INTENSET ENDCRYPT */
    decrypt(1, 1, &cr);
    CHECK_EQ("MICSTATUS passed", C(0x400), 1);
    CHECK_EQ("decrypted length", dec[1], 27);
    CHECK("decrypted payload", dec[0] == 0x0E && same(&dec[3], DATA1, 27));
    CHECK_PPI_TIME("CRYPT to ENDCRYPT at 2 Mbit", cr, (2 + 31) * 4 * TICKS_US);
    CHECK_EQ("ENDCRYPT interrupt once", irq_count, 1);
    CHECK_EQ("handler saw ENDCRYPT", irq_saw_endcrypt, 1);
    irq_disable(15);

    enc[3 + 5] ^= 0x20;                                   /* tamper with the ciphertext */
    decrypt(1, 1, &cr);
    CHECK_EQ("tampered packet: MICSTATUS failed", C(0x400), 0);
    CHECK("tampered packet: counter mode flips the same bit",
          dec[3 + 5] == (DATA1[5] ^ 0x20) && same(&dec[3], DATA1, 5));
    enc[3 + 5] ^= 0x20;
    decrypt(1, 1, &cr);
    CHECK_EQ("restored packet: MICSTATUS passed", C(0x400), 1);
    decrypt(2, 1, &cr);
    CHECK_EQ("wrong packet counter: MICSTATUS failed", C(0x400), 0);
    decrypt(1, 0, &cr);
    CHECK_EQ("wrong direction: MICSTATUS failed", C(0x400), 0);

    /* 3. an empty packet has no MIC; EasyDMA reaches RAM only */
    set_plain(0x01, 0, 0);
    encrypt(3, 1, &ks, &cr);
    CHECK("empty packet passes without MIC", enc[0] == 0x01 && enc[1] == 0);
    CHECK_EQ("empty packet air time", cr, 2 * 8 * TICKS_US);
    C(0x50C) = 0x00001000u;                               /* INPTR in flash */
    clear_events();
    C(0x200) = 0;
    C(0x000) = 1;
    CHECK("KSGEN", wait_reg(SLOT + 0x100, 10000));
    C(0x004) = 1;                                         /* CRYPT */
    CHECK_EQ("INPTR outside RAM: ERROR", C(0x108), 1);
    C(0x008) = 1;                                         /* STOP */

    /* shared registers: what MODE holds, the AAR reads as NIRK */
    C(0x504) = MODE_EXTENDED | MODE_DECRYPT;
    C(0x500) = 0;
    C(0x500) = 3;
    CHECK_EQ("ENABLE reads AAR", C(0x500), 3);
    CHECK_EQ("MODE's low bits are NIRK", C(0x504), 1);

    /* 4. AAR.  The host generates the address with the ECB: hash = ah(IRK, prand) */
    for (int i = 0; i < 16; i++) {
        irks[0][i] = (uint8_t)(0x11 * i);
        irks[1][i] = (uint8_t)(0xA5 ^ i);
        irks[2][i] = SPEC_IRK[i];
        ecb_data[i] = SPEC_IRK[i];
        ecb_data[16 + i] = 0;
    }
    ecb_data[29] = 0x70; ecb_data[30] = 0x81; ecb_data[31] = 0x94;   /* prand, MSO first */
    REG32(ECB + 0x504) = (uint32_t)ecb_data;
    REG32(ECB + 0x100) = 0;
    REG32(ECB + 0x000) = 1;
    CHECK("ECB ENDECB", wait_reg(ECB + 0x100, 100000));
    uint32_t hash = (ecb_data[45] << 16) | (ecb_data[46] << 8) | ecb_data[47];
    CHECK_EQ("spec ah(IRK, 0x708194)", hash, 0x0DFBAA);
    /* ADV_IND with TxAdd = random: header, length, S1, AdvA least significant first */
    adv[0] = 0x40; adv[1] = 6; adv[2] = 0;
    adv[3] = hash; adv[4] = hash >> 8; adv[5] = hash >> 16;
    adv[6] = 0x94; adv[7] = 0x81; adv[8] = 0x70;

    /* ble_phy_rx_xcvr_setup / ble_phy_rx_start_isr */
    C(0x508) = (uint32_t)irks;                            /* IRKPTR */
    C(0x514) = (uint32_t)&aar_scratch;
    clear_events();
    C(0x504) = 3;                                         /* NIRK */
    C(0x510) = (uint32_t)adv;                             /* ADDRPTR: the packet */
    uint32_t t0 = task_by_ppi(0x000, 10);                     /* START, as BCMATCH would */
    CHECK("AAR END", wait_reg(SLOT + 0x100, 100000));
    CHECK_EQ("RESOLVED", C(0x104), 1);
    CHECK_EQ("not NOTRESOLVED", C(0x108), 0);
    CHECK_EQ("STATUS = IRK index 2", C(0x400), 2);
    CHECK_PPI_TIME("START to END: 1 us + 6 us per IRK tried", T(0x540) - t0,
             (1 + 3 * 6) * TICKS_US);

    adv[3] ^= 1;                                          /* a hash no IRK gives */
    clear_events();
    t0 = task_by_ppi(0x000, 10);
    CHECK("AAR END again", wait_reg(SLOT + 0x100, 100000));
    CHECK_EQ("wrong hash: NOTRESOLVED", C(0x108), 1);
    CHECK_EQ("wrong hash: not RESOLVED", C(0x104), 0);
    CHECK_EQ("STATUS kept", C(0x400), 2);

    adv[3] ^= 1;
    C(0x504) = 2;                                         /* NIRK leaves IRK 2 out */
    clear_events();
    t0 = task_by_ppi(0x000, 10);
    CHECK("AAR END, two IRKs", wait_reg(SLOT + 0x100, 100000));
    CHECK_EQ("NIRK 2: NOTRESOLVED", C(0x108), 1);
    CHECK_PPI_TIME("two IRKs tried", T(0x540) - t0, (1 + 2 * 6) * TICKS_US);

    C(0x500) = 0;
    P(0x508) = 7;                                         /* CHENCLR */
    return harness_failures;
}
