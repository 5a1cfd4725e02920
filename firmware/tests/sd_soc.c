/* S132 SoC library test: the SVCs of nrf_soc.h called as nRF5 SDK code calls
 * them, with the return codes of nrf_error.h / nrf_error_soc.h.
 * Boot 1: SVCs before sd_softdevice_enable (NOT_ENABLED, synchronous flash,
 * PPI), then PPI, mutex, rand, ECB (FIPS-197), power, clock, app_evt_wait,
 * asynchronous flash with NRF_EVT_FLASH_OPERATION_SUCCESS through SWI2 +
 * sd_evt_get; keeps its failure count in GPREGRET, a marker in GPREGRET2,
 * and resets (SYSRESETREQ).  Boot 2: RESETREAS.SREQ through
 * sd_power_reset_reason_get/clr, GPREGRET kept, flash kept. */
#include "harness.h"
#include "cm4.h"
#include "sd_api.h"

#define NRF_ERROR_SOFTDEVICE_NOT_ENABLED 2
#define NRF_ERROR_INVALID_PARAM 7
#define NRF_ERROR_INVALID_LENGTH 9
#define NRF_ERROR_FORBIDDEN 15
#define NRF_ERROR_INVALID_ADDR 16
#define NRF_ERROR_BUSY 17
#define NRF_ERROR_SOC_MUTEX_ALREADY_TAKEN 0x2000
#define NRF_ERROR_SOC_POWER_MODE_UNKNOWN 0x2004
#define NRF_ERROR_SOC_POWER_POF_THRESHOLD_UNKNOWN 0x2005
#define NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES 0x2007
#define NRF_ERROR_SOC_PPI_INVALID_CHANNEL 0x2008
#define NRF_ERROR_SOC_PPI_INVALID_GROUP 0x2009
#define NRF_EVT_FLASH_OPERATION_SUCCESS 2

#define TIMER1 0x40009000u
#define TIMER2 0x4000A000u
#define EGU3 0x40017000u
#define PPI 0x4001F000u
#define POWER 0x40000000u
#define PAGE_SYNC 0x7E
#define PAGE_ASYNC 0x7F
#define FLASH(page, word) REG32((page) * 4096u + 4u * (word))
#define BOOT_MARKER 0x5A

static volatile int t1_fired, swi0_count, flash_events, other_events;
static volatile uint32_t flash_evt_us;

static uint32_t now_us(void) {
    REG32(TIMER2 + 0x044) = 1;              /* TASKS_CAPTURE[1] */
    return REG32(TIMER2 + 0x544);
}

void IRQ9_Handler(void) {                   /* TIMER1 */
    REG32(TIMER1 + 0x140) = 0;
    t1_fired = 1;
}

void IRQ20_Handler(void) { swi0_count++; }  /* SWI0 */

void IRQ22_Handler(void) {                  /* SWI2: SD_EVT_IRQn */
    uint32_t id;
    while (sd_evt_get(&id) == 0) {
        if (id == NRF_EVT_FLASH_OPERATION_SUCCESS) { flash_events++; flash_evt_us = now_us(); }
        else other_events++;
    }
}

static void timers_init(void) {
    REG32(TIMER2 + 0x508) = 3;              /* BITMODE 32 */
    REG32(TIMER2 + 0x510) = 4;              /* 1 MHz */
    REG32(TIMER2 + 0x000) = 1;
    REG32(TIMER1 + 0x508) = 3;
    REG32(TIMER1 + 0x510) = 4;
    REG32(TIMER1 + 0x200) = (1u << 0) | (1u << 8);   /* COMPARE0_CLEAR | COMPARE0_STOP */
    REG32(TIMER1 + 0x304) = 1u << 16;                 /* INTENSET COMPARE0 */
    irq_prio(9, 0xC0);   /* application priority 6: S132 refuses to enable while an
                            enabled interrupt sits at its priorities 0, 1 or 4 */
    irq_enable(9);
}

static void timer1_start(uint32_t us) {
    t1_fired = 0;
    REG32(TIMER1 + 0x00C) = 1;              /* CLEAR */
    REG32(TIMER1 + 0x540) = us;
    REG32(TIMER1 + 0x000) = 1;
}

/* Sleep in sd_app_evt_wait until TIMER1 fires; returns the number of calls. */
static int wait_us(uint32_t us) {
    int calls = 0;
    timer1_start(us);
    while (!t1_fired) { sd_app_evt_wait(); calls++; }
    return calls;
}

static int wait_flash_event(void) {
    int calls = 0;
    while (!flash_events) { sd_app_evt_wait(); calls++; }
    flash_events = 0;
    return calls;
}

/* nrf_fault_handler_t: called by the SoftDevice's HardFault handler (only when
 * the emulated SoftDevice is strict and the app writes a protected peripheral). */
static void sd_fault_handler(uint32_t id, uint32_t pc, uint32_t info) {
    semihost_puts("SDFAULT ");
    put_hex(id);
    semihost_puts(" ");
    put_hex(info);
    semihost_puts(" IPSR ");
    put_hex(get_ipsr());
    semihost_puts("\n");
    semihost_exit(0x77);
}

static void second_boot(void) {
    uint32_t v = 0, rr = 0xDEAD;
    CHECK_EQ("boot 2: SoftDevice disabled again after reset", sd_power_reset_reason_get(&rr),
             NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("boot 2: softdevice_enable", sd_softdevice_enable(0, (void *)sd_fault_handler), 0);
    CHECK_EQ("reset_reason_get", sd_power_reset_reason_get(&rr), 0);
    CHECK("RESETREAS.SREQ after SYSRESETREQ", (rr & 4) != 0);
    CHECK_EQ("reset_reason_get matches RESETREAS", rr, REG32(POWER + 0x400));
    CHECK_EQ("reset_reason_clr", sd_power_reset_reason_clr(rr), 0);
    sd_power_reset_reason_get(&rr);
    CHECK_EQ("reset reason cleared (W1C)", rr, 0);
    CHECK_EQ("RESETREAS register cleared", REG32(POWER + 0x400), 0);
    CHECK("GPREGRET2 kept over soft reset", sd_power_gpregret_get(1, &v) == 0 && v == BOOT_MARKER);
    uint32_t carried = 0;
    sd_power_gpregret_get(0, &carried);
    CHECK("flash written through the SoftDevice kept", FLASH(PAGE_ASYNC, 0) == 0x00005678 &&
          FLASH(PAGE_ASYNC, 7) == 0x87654321);
    sd_power_gpregret_clr(0, 0xFF);
    sd_power_gpregret_clr(1, 0xFF);
    semihost_puts("BOOT2 DONE\n");
    semihost_exit(harness_failures + (int)carried);
}

int main(void) {
    if (REG32(POWER + 0x520) == BOOT_MARKER) second_boot();
    timers_init();
    uint32_t v = 0;
    uint8_t b = 0;
    nrf_mutex_t mutex = 0xEE;

    /* ---- SoftDevice disabled ---- */
    CHECK_EQ("mutex_new before enable: NOT_ENABLED", sd_mutex_new(&mutex), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("rand capacity before enable: NOT_ENABLED", sd_rand_application_pool_capacity_get(&b), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("gpregret_set before enable: NOT_ENABLED", sd_power_gpregret_set(0, 1), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("app_evt_wait before enable: NOT_ENABLED", sd_app_evt_wait(), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("evt_get before enable: NOT_ENABLED", sd_evt_get(&v), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("hfclk_request before enable: NOT_ENABLED", sd_clock_hfclk_request(), NRF_ERROR_SOFTDEVICE_NOT_ENABLED);
    CHECK_EQ("GPREGRET untouched", REG32(POWER + 0x51C), 0);
    CHECK_EQ("mutex untouched", mutex, 0xEE);
    CHECK_EQ("ppi_channel_assign 19 while disabled", sd_ppi_channel_assign(19, (void *)(EGU3 + 0x100), (void *)(EGU3 + 0x004)), 0);
    CHECK_EQ("PPI CH[19].TEP written", REG32(PPI + 0x514 + 8 * 19), EGU3 + 0x004);
    CHECK_EQ("ppi group 5 while disabled", sd_ppi_group_assign(5, 0), 0);
    /* flash while disabled: done before the call returns, no event */
    CHECK_EQ("page_erase (disabled)", sd_flash_page_erase(PAGE_SYNC), 0);
    CHECK_EQ("page erased at once", FLASH(PAGE_SYNC, 0), 0xFFFFFFFF);
    static uint32_t sync_data[2] = {0xCAFEF00D, 0x00000000};
    CHECK_EQ("flash_write (disabled)", sd_flash_write((uint32_t *)(PAGE_SYNC * 4096), sync_data, 2), 0);
    CHECK("written at once", FLASH(PAGE_SYNC, 0) == 0xCAFEF00D && FLASH(PAGE_SYNC, 1) == 0);
    static const uint32_t zero = 0;
    CHECK_EQ("flash_write word 0 to the async page", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), &zero, 1), 0);
    CHECK_EQ("forbidden while disabled too", sd_flash_page_erase(0x25), NRF_ERROR_FORBIDDEN);

    /* ---- enable ---- */
    CHECK_EQ("softdevice_enable", sd_softdevice_enable(0, (void *)sd_fault_handler), 0);
    irq_enable(22);
    /* app accesses the SoftDevice reserves: logged by the emulator */
    REG32(0x4001E504) = 0;                  /* NVMC CONFIG: restricted peripheral */
    NVIC_ISER(0) = 1u << 11;                /* RTC0 IRQ: SD_RESERVED_IRQ_MASK */
    NVIC_ICER(0) = 1u << 11;

    /* PPI */
    CHECK_EQ("ppi_channel_assign 17: reserved", sd_ppi_channel_assign(17, (void *)(EGU3 + 0x100), (void *)(EGU3 + 0x004)), NRF_ERROR_SOC_PPI_INVALID_CHANNEL);
    CHECK_EQ("ppi_channel_assign 20: fixed", sd_ppi_channel_assign(20, 0, 0), NRF_ERROR_SOC_PPI_INVALID_CHANNEL);
    CHECK_EQ("ppi_channel_assign 3", sd_ppi_channel_assign(3, (void *)(EGU3 + 0x100), (void *)(EGU3 + 0x004)), 0);
    CHECK("PPI CH[3] EEP/TEP registers", REG32(PPI + 0x510 + 24) == EGU3 + 0x100 && REG32(PPI + 0x514 + 24) == EGU3 + 0x004);
    CHECK_EQ("ppi_channel_enable_set 3", sd_ppi_channel_enable_set(1u << 3), 0);
    CHECK_EQ("ppi_channel_enable_set 20: reserved", sd_ppi_channel_enable_set(1u << 20), NRF_ERROR_SOC_PPI_INVALID_CHANNEL);
    CHECK("ppi_channel_enable_get", sd_ppi_channel_enable_get(&v) == 0 && v == (1u << 3));
    CHECK_EQ("PPI CHEN register", REG32(PPI + 0x500), 1u << 3);
    REG32(EGU3 + 0x000) = 1;                /* TRIGGER[0] -> PPI ch 3 -> TRIGGER[1] */
    CHECK_EQ("channel routes EGU3 TRIGGERED[0] to TRIGGER[1]", REG32(EGU3 + 0x104), 1);
    REG32(EGU3 + 0x100) = 0; REG32(EGU3 + 0x104) = 0;
    CHECK_EQ("ppi_channel_enable_clr 3", sd_ppi_channel_enable_clr(1u << 3), 0);
    CHECK_EQ("CHEN cleared", REG32(PPI + 0x500), 0);
    CHECK_EQ("ppi_group_assign 0", sd_ppi_group_assign(0, 1u << 3), 0);
    CHECK("ppi_group_get 0", sd_ppi_group_get(0, &v) == 0 && v == (1u << 3));
    CHECK_EQ("ppi_group_task_enable 0", sd_ppi_group_task_enable(0), 0);
    CHECK_EQ("group enable sets CHEN", REG32(PPI + 0x500), 1u << 3);
    CHECK_EQ("ppi_group_task_disable 0", sd_ppi_group_task_disable(0), 0);
    CHECK_EQ("group disable clears CHEN", REG32(PPI + 0x500), 0);
    CHECK_EQ("ppi group 4: reserved", sd_ppi_group_assign(4, 1), NRF_ERROR_SOC_PPI_INVALID_GROUP);
    CHECK_EQ("ppi group 6: invalid", sd_ppi_group_task_enable(6), NRF_ERROR_SOC_PPI_INVALID_GROUP);

    /* mutex */
    CHECK("mutex_new", sd_mutex_new(&mutex) == 0 && mutex == 0);
    CHECK("mutex_acquire", sd_mutex_acquire(&mutex) == 0 && mutex == 1);
    CHECK_EQ("mutex_acquire taken", sd_mutex_acquire(&mutex), NRF_ERROR_SOC_MUTEX_ALREADY_TAKEN);
    CHECK("mutex_release", sd_mutex_release(&mutex) == 0 && mutex == 0);
    CHECK_EQ("mutex_acquire after release", sd_mutex_acquire(&mutex), 0);

    /* sd_app_evt_wait */
    uint32_t t0 = now_us();
    int calls = wait_us(1000);
    CHECK("app_evt_wait sleeps until the TIMER1 interrupt", t1_fired && now_us() - t0 >= 1000 && calls <= 2);
    irq_enable(20);
    irq_pend(20);                           /* SWI0 taken at once */
    t0 = now_us();
    CHECK_EQ("app_evt_wait after an app interrupt", sd_app_evt_wait(), 0);
    CHECK("returns at once after an app interrupt", swi0_count == 1 && now_us() - t0 < 50);
    SCB_SCR |= 0x10;                        /* SEVONPEND */
    irq_pend(21);                           /* SWI1, disabled */
    t0 = now_us();
    sd_app_evt_wait();
    CHECK("SEVONPEND: disabled pending interrupt returns at once", now_us() - t0 < 50);
    SCB_SCR &= ~0x10u;
    timer1_start(500);
    t0 = now_us();
    sd_app_evt_wait();
    CHECK("without SEVONPEND a disabled pending interrupt does not wake", t1_fired && now_us() - t0 >= 500);
    NVIC_ICPR(0) = 1u << 21;

    /* rand */
    CHECK("rand pool capacity", sd_rand_application_pool_capacity_get(&b) == 0 && b == 64);
    uint8_t rnd[16] = {0};
    wait_us(2000);
    CHECK("rand bytes available after 2 ms", sd_rand_application_bytes_available_get(&b) == 0 && b >= 16);
    CHECK_EQ("rand vector_get 16", sd_rand_application_vector_get(rnd, 16), 0);
    int same = 1;
    for (int i = 1; i < 16; i++) same &= rnd[i] == rnd[0];
    CHECK("rand bytes differ", !same);
    CHECK_EQ("rand vector_get more than available", sd_rand_application_vector_get(rnd, 65), NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES);
    semihost_puts("RAND ");
    for (int i = 0; i < 16; i++) { static const char hx[] = "0123456789abcdef"; semihost_putc(hx[rnd[i] >> 4]); semihost_putc(hx[rnd[i] & 15]); }
    semihost_puts("\n");

    /* ECB: FIPS-197 appendix C.1, and the all-zero key/block */
    static nrf_ecb_hal_data_t ecb;
    for (int i = 0; i < 16; i++) { ecb.key[i] = i; ecb.cleartext[i] = i * 0x11; }
    static const uint8_t c1[16] = {0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30,
                                   0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a};
    static const uint8_t c0[16] = {0x66, 0xe9, 0x4b, 0xd4, 0xef, 0x8a, 0x2c, 0x3b,
                                   0x88, 0x4c, 0xfa, 0x59, 0xca, 0x34, 0x2b, 0x2e};
    CHECK_EQ("ecb_block_encrypt", sd_ecb_block_encrypt(&ecb), 0);
    int ok = 1;
    for (int i = 0; i < 16; i++) ok &= ecb.ciphertext[i] == c1[i];
    CHECK("ecb FIPS-197 C.1", ok);
    static const uint8_t zkey[16], zclear[16];
    static uint8_t out0[16], out1[16];
    nrf_ecb_hal_data_block_t blocks[2] = {
        {(const uint8_t (*)[16])ecb.key, (const uint8_t (*)[16])ecb.cleartext, (uint8_t (*)[16])out1},
        {&zkey, &zclear, &out0}};
    CHECK_EQ("ecb_blocks_encrypt", sd_ecb_blocks_encrypt(2, blocks), 0);
    ok = 1;
    for (int i = 0; i < 16; i++) ok &= out1[i] == c1[i] && out0[i] == c0[i];
    CHECK("ecb_blocks_encrypt both blocks", ok);

    /* POWER */
    CHECK_EQ("gpregret_set", sd_power_gpregret_set(0, 0xA5), 0);
    CHECK("gpregret_get", sd_power_gpregret_get(0, &v) == 0 && v == 0xA5);
    CHECK_EQ("GPREGRET register", REG32(POWER + 0x51C), 0xA5);
    sd_power_gpregret_clr(0, 0x05);
    CHECK_EQ("gpregret_clr", REG32(POWER + 0x51C), 0xA0);
    CHECK("gpregret2", sd_power_gpregret_set(1, 3) == 0 && REG32(POWER + 0x520) == 3);
    CHECK_EQ("gpregret id 2: INVALID_PARAM", sd_power_gpregret_set(2, 1), NRF_ERROR_INVALID_PARAM);
    CHECK("reset_reason_get at power-on", sd_power_reset_reason_get(&v) == 0 && v == 0);
    CHECK_EQ("power_mode_set CONSTLAT", sd_power_mode_set(0), 0);
    CHECK_EQ("power_mode_set LOWPWR", sd_power_mode_set(1), 0);
    CHECK_EQ("power_mode_set unknown", sd_power_mode_set(5), NRF_ERROR_SOC_POWER_MODE_UNKNOWN);
    CHECK("dcdc_mode_set", sd_power_dcdc_mode_set(1) == 0 && REG32(POWER + 0x578) == 1);
    CHECK_EQ("dcdc_mode_set invalid", sd_power_dcdc_mode_set(2), NRF_ERROR_INVALID_PARAM);
    CHECK_EQ("pof_enable", sd_power_pof_enable(1), 0);
    CHECK_EQ("pof_threshold_set V27", sd_power_pof_threshold_set(14), 0);
    CHECK_EQ("POFCON.THRESHOLD", (REG32(POWER + 0x510) >> 1) & 0xF, 14);
    CHECK_EQ("pof_threshold_set unknown", sd_power_pof_threshold_set(3), NRF_ERROR_SOC_POWER_POF_THRESHOLD_UNKNOWN);
    CHECK_EQ("ram_power_clr 1", sd_power_ram_power_clr(1, 0x30000), 0);
    CHECK("ram_power_get 1", sd_power_ram_power_get(1, &v) == 0 && (v & 0x30000) == 0);
    CHECK_EQ("ram_power_set 1", sd_power_ram_power_set(1, 0x30000), 0);
    CHECK("RAM[1].POWER retention on", (REG32(POWER + 0x910) & 0x30000) == 0x30000);

    /* CLOCK */
    CHECK("hfclk not running", sd_clock_hfclk_is_running(&v) == 0 && v == 0);
    CHECK_EQ("hfclk_request", sd_clock_hfclk_request(), 0);
    sd_clock_hfclk_is_running(&v);
    CHECK_EQ("HFXO still starting", v, 0);
    wait_us(500);
    CHECK("hfclk running after start-up", sd_clock_hfclk_is_running(&v) == 0 && v == 1);
    CHECK_EQ("hfclk_release", sd_clock_hfclk_release(), 0);
    CHECK("hfclk stopped", sd_clock_hfclk_is_running(&v) == 0 && v == 0);

    /* radio notification, flash protection */
    CHECK_EQ("radio_notification_cfg_set", sd_radio_notification_cfg_set(3, 1), 0);
    CHECK_EQ("radio_notification_cfg_set bad type", sd_radio_notification_cfg_set(4, 0), NRF_ERROR_INVALID_PARAM);
    CHECK_EQ("flash_protect", sd_flash_protect(0, 0, 0, 0), 0);
    CHECK_EQ("protected_register_write BPROT CONFIG0", sd_protected_register_write((volatile uint32_t *)0x40000600, 0), 0);
    CHECK_EQ("protected_register_write other: INVALID_ADDR", sd_protected_register_write((volatile uint32_t *)(POWER + 0x51C), 0), NRF_ERROR_INVALID_ADDR);

    /* flash, asynchronous while enabled */
    static uint32_t buf[8] = {0x12345678, 1, 2, 3, 4, 5, 6, 0x87654321};
    CHECK_EQ("forbidden: SoftDevice page", sd_flash_page_erase(0x10), NRF_ERROR_FORBIDDEN);
    CHECK_EQ("forbidden: write into the SoftDevice", sd_flash_write((uint32_t *)0x1000, buf, 1), NRF_ERROR_FORBIDDEN);
    CHECK_EQ("page past the flash: INVALID_ADDR", sd_flash_page_erase(128), NRF_ERROR_INVALID_ADDR);
    CHECK_EQ("misaligned dst: INVALID_ADDR", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096 + 2), buf, 1), NRF_ERROR_INVALID_ADDR);
    CHECK_EQ("size 0: INVALID_LENGTH", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), buf, 0), NRF_ERROR_INVALID_LENGTH);
    CHECK_EQ("size > page: INVALID_LENGTH", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), buf, 1025), NRF_ERROR_INVALID_LENGTH);
    t0 = now_us();
    CHECK_EQ("page_erase accepted", sd_flash_page_erase(PAGE_ASYNC), 0);
    CHECK_EQ("second erase: BUSY", sd_flash_page_erase(PAGE_ASYNC), NRF_ERROR_BUSY);
    CHECK_EQ("write meanwhile: BUSY", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), buf, 8), NRF_ERROR_BUSY);
    CHECK_EQ("not erased yet", FLASH(PAGE_ASYNC, 0), 0);
    wait_flash_event();
    uint32_t dt = flash_evt_us - t0;
    CHECK("erase event after the page erase time (85 ms)", dt >= 85000 && dt < 90000);
    CHECK_EQ("page erased", FLASH(PAGE_ASYNC, 0), 0xFFFFFFFF);
    t0 = now_us();
    CHECK_EQ("flash_write 8 words", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), buf, 8), 0);
    CHECK_EQ("not written yet", FLASH(PAGE_ASYNC, 0), 0xFFFFFFFF);
    wait_flash_event();
    dt = flash_evt_us - t0;
    CHECK("write event after 8 x 41 us", dt >= 328 && dt < 2000);
    ok = 1;
    for (int i = 0; i < 8; i++) ok &= FLASH(PAGE_ASYNC, i) == buf[i];
    CHECK("flash contents", ok);
    static const uint32_t low = 0x0000FFFF;
    CHECK_EQ("overwrite word 0", sd_flash_write((uint32_t *)(PAGE_ASYNC * 4096), &low, 1), 0);
    wait_flash_event();
    CHECK_EQ("a write only clears bits", FLASH(PAGE_ASYNC, 0), 0x00005678);
    CHECK_EQ("no other SoC events", other_events, 0);

    /* carry the verdict over a soft reset */
    sd_power_gpregret_clr(0, 0xFF);
    sd_power_gpregret_set(0, harness_failures);
    sd_power_gpregret_clr(1, 0xFF);
    sd_power_gpregret_set(1, BOOT_MARKER);
    semihost_puts("REBOOT\n");
    SCB_AIRCR = 0x05FA0004;
    for (;;) {}
}
