/* Cortex-M4 core registers used by the tests (ARMv7-M ARM, B3). */
#ifndef CM4_H
#define CM4_H
#include <stdint.h>
#define NVIC_ISER(n) REG32(0xE000E100 + 4 * (n))
#define NVIC_ICER(n) REG32(0xE000E180 + 4 * (n))
#define NVIC_ISPR(n) REG32(0xE000E200 + 4 * (n))
#define NVIC_ICPR(n) REG32(0xE000E280 + 4 * (n))
#define NVIC_IABR(n) REG32(0xE000E300 + 4 * (n))
#define NVIC_IPR8(n) (*(volatile uint8_t *)(0xE000E400 + (n)))
#define NVIC_STIR    REG32(0xE000EF00)
#define SCB_CPUID    REG32(0xE000ED00)
#define SCB_ICSR     REG32(0xE000ED04)
#define SCB_VTOR     REG32(0xE000ED08)
#define SCB_AIRCR    REG32(0xE000ED0C)
#define SCB_SCR      REG32(0xE000ED10)
#define SCB_CCR      REG32(0xE000ED14)
#define SCB_SHPR8(n) (*(volatile uint8_t *)(0xE000ED18 + (n) - 4))
#define SCB_SHCSR    REG32(0xE000ED24)
#define SCB_CFSR     REG32(0xE000ED28)
#define SCB_HFSR     REG32(0xE000ED2C)
#define SCB_MMFAR    REG32(0xE000ED34)
#define SCB_BFAR     REG32(0xE000ED38)
#define SYST_CSR     REG32(0xE000E010)
#define SYST_RVR     REG32(0xE000E014)
#define SYST_CVR     REG32(0xE000E018)
#define DEMCR        REG32(0xE000EDFC)
#define DWT_CTRL     REG32(0xE0001000)
#define DWT_CYCCNT   REG32(0xE0001004)
#define MPU_TYPE     REG32(0xE000ED90)
#define MPU_CTRL     REG32(0xE000ED94)
#define MPU_RNR      REG32(0xE000ED98)
#define MPU_RBAR     REG32(0xE000ED9C)
#define MPU_RASR     REG32(0xE000EDA0)
#define MPU_RBAR_A1  REG32(0xE000EDA4)
#define MPU_RASR_A1  REG32(0xE000EDA8)
#define ITM_PORT0    (*(volatile uint8_t *)0xE0000000)

static inline void irq_enable(int n) { NVIC_ISER(n / 32) = 1u << (n % 32); }
static inline void irq_disable(int n) { NVIC_ICER(n / 32) = 1u << (n % 32); }
static inline void irq_pend(int n) { NVIC_ISPR(n / 32) = 1u << (n % 32); }
static inline void irq_prio(int n, uint8_t p) { NVIC_IPR8(n) = p; }
static inline void dsb_isb(void) { __asm volatile("dsb\n isb" ::: "memory"); }
static inline uint32_t get_primask(void) { uint32_t v; __asm volatile("mrs %0, primask" : "=r"(v)); return v; }
static inline uint32_t get_ipsr(void) { uint32_t v; __asm volatile("mrs %0, ipsr" : "=r"(v)); return v; }
static inline uint32_t get_control(void) { uint32_t v; __asm volatile("mrs %0, control" : "=r"(v)); return v; }
static inline void set_basepri(uint32_t v) { __asm volatile("msr basepri, %0" :: "r"(v) : "memory"); }
static inline void cpsid(void) { __asm volatile("cpsid i" ::: "memory"); }
static inline void cpsie(void) { __asm volatile("cpsie i" ::: "memory"); }
#endif
