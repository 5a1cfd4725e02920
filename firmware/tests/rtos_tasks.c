/* A tiny cooperative scheduler whose kernel data copies FreeRTOS's (V9/V10 on
 * Cortex-M, no MPU wrappers): the TCB and list layouts, the names of the
 * kernel's variables, and the ARM_CM4F port's saved context (r4-r11 and
 * EXC_RETURN, s16-s31 when the task has an FP context, then the exception
 * frame).  Our own code, not FreeRTOS's: it lets CI exercise the FreeRTOS
 * reader of emu/rtos.py and the GDB stub's threads (tests/machine/test_rtos.py).
 *
 * Tasks: "IDLE" (priority 0) advances the tick, wakes delayed tasks and
 * resumes the worker; "blinky" (1) waits on the delayed list in
 * blinky_wait() -> task_delay() -> task_yield() with known values in r4-r11,
 * s0 and s16; "worker" (2) suspends itself in worker_step(); "oneshot" (1)
 * runs once and deletes itself (it stays on xTasksWaitingTermination).
 * Every CHECKPOINT_EVERY ticks IDLE calls checkpoint(), where the tests stop
 * (a GDB breakpoint, or the Python API while checkpoint() spins on
 * `checkpoint_release`): blinky is then blocked, worker suspended, oneshot
 * deleted, IDLE running.  At the end the firmware checks that every task
 * got its registers back intact and reports PASS/FAIL. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

typedef uint32_t TickType_t;
typedef uint32_t UBaseType_t;

struct xLIST_ITEM {
    volatile TickType_t xItemValue;
    struct xLIST_ITEM *volatile pxNext;
    struct xLIST_ITEM *volatile pxPrevious;
    void *pvOwner;
    void *volatile pvContainer;
};
typedef struct xLIST_ITEM ListItem_t;
typedef struct { volatile TickType_t xItemValue; ListItem_t *volatile pxNext, *volatile pxPrevious; }
    MiniListItem_t;
typedef struct {
    volatile UBaseType_t uxNumberOfItems;
    ListItem_t *volatile pxIndex;
    MiniListItem_t xListEnd;
} List_t;

typedef struct tskTaskControlBlock {
    volatile uint32_t *pxTopOfStack;        /* must stay first: the port saves SP here */
    ListItem_t xStateListItem;
    ListItem_t xEventListItem;
    UBaseType_t uxPriority;
    uint32_t *pxStack;
    char pcTaskName[16];
} TCB_t;

#define PRIORITIES 3
#define STACK_WORDS 256
#define CHECKPOINT_EVERY 40
#define CHECKPOINTS 3
#define BLINKY_PATTERN 0x5A000000u
#define FLOAT_PATTERN 0x40490FDBu           /* 3.14159274f */

/* the kernel's state, named as FreeRTOS's tasks.c names it */
#define KERNEL __attribute__((used))
KERNEL TCB_t *volatile pxCurrentTCB;
KERNEL static List_t pxReadyTasksLists[PRIORITIES];
KERNEL static List_t xDelayedTaskList1, xDelayedTaskList2;
KERNEL static List_t *volatile pxDelayedTaskList = &xDelayedTaskList1;
KERNEL static List_t *volatile pxOverflowDelayedTaskList = &xDelayedTaskList2;
KERNEL static List_t xPendingReadyList, xSuspendedTaskList, xTasksWaitingTermination;
KERNEL static volatile UBaseType_t uxCurrentNumberOfTasks;
KERNEL static volatile TickType_t xTickCount;
KERNEL static volatile UBaseType_t uxTopReadyPriority;
KERNEL static volatile long xSchedulerRunning;
KERNEL const volatile UBaseType_t uxTopUsedPriority = PRIORITIES - 1;

static TCB_t tcb_idle, tcb_blinky, tcb_worker, tcb_oneshot;
static uint32_t stack_idle[STACK_WORDS] __attribute__((aligned(8)));
static uint32_t stack_blinky[STACK_WORDS] __attribute__((aligned(8)));
static uint32_t stack_worker[STACK_WORDS] __attribute__((aligned(8)));
static uint32_t stack_oneshot[STACK_WORDS] __attribute__((aligned(8)));

volatile uint32_t checkpoint_hits, checkpoint_release, checkpoint_spins;
static volatile uint32_t corrupt, blinky_rounds, worker_rounds, oneshot_ran, exit_errors;

/* ---- lists (the semantics of FreeRTOS's list.c) ---- */
static void list_init(List_t *l) {
    l->pxIndex = (ListItem_t *)&l->xListEnd;
    l->xListEnd.xItemValue = 0xFFFFFFFFu;
    l->xListEnd.pxNext = l->xListEnd.pxPrevious = (ListItem_t *)&l->xListEnd;
    l->uxNumberOfItems = 0;
}

static void list_insert_end(List_t *l, ListItem_t *it) {
    ListItem_t *idx = l->pxIndex;
    it->pxNext = idx;
    it->pxPrevious = idx->pxPrevious;
    idx->pxPrevious->pxNext = it;
    idx->pxPrevious = it;
    it->pvContainer = l;
    l->uxNumberOfItems++;
}

static void list_insert_sorted(List_t *l, ListItem_t *it) {
    ListItem_t *at = (ListItem_t *)&l->xListEnd;
    while (at->pxNext != (ListItem_t *)&l->xListEnd && at->pxNext->xItemValue <= it->xItemValue)
        at = at->pxNext;
    it->pxNext = at->pxNext;
    it->pxNext->pxPrevious = it;
    it->pxPrevious = at;
    at->pxNext = it;
    it->pvContainer = l;
    l->uxNumberOfItems++;
}

static void list_remove(ListItem_t *it) {
    List_t *l = it->pvContainer;
    it->pxNext->pxPrevious = it->pxPrevious;
    it->pxPrevious->pxNext = it->pxNext;
    if (l->pxIndex == it) l->pxIndex = it->pxPrevious;
    it->pvContainer = 0;
    l->uxNumberOfItems--;
}

/* ---- the scheduler ---- */
static void make_ready(TCB_t *t) {
    if (t->xStateListItem.pvContainer) list_remove(&t->xStateListItem);
    list_insert_end(&pxReadyTasksLists[t->uxPriority], &t->xStateListItem);
    if (t->uxPriority > uxTopReadyPriority) uxTopReadyPriority = t->uxPriority;
}

/* Called from PendSV: the next ready task of the highest priority, round robin. */
void vTaskSwitchContext(void) {
    UBaseType_t p = PRIORITIES - 1;
    while (pxReadyTasksLists[p].uxNumberOfItems == 0) p--;     /* IDLE is always ready */
    uxTopReadyPriority = p;
    List_t *l = &pxReadyTasksLists[p];
    l->pxIndex = l->pxIndex->pxNext;
    if (l->pxIndex == (ListItem_t *)&l->xListEnd) l->pxIndex = l->pxIndex->pxNext;
    pxCurrentTCB = l->pxIndex->pvOwner;
}

/* The ARM_CM4F port's switch, written afresh: save r4-r11, EXC_RETURN and,
 * with an FP context, s16-s31 on the task's stack; pick; restore. */
__attribute__((naked)) void PendSV_Handler(void) {
    __asm volatile(
        "mrs r0, psp\n isb\n"
        "ldr r3, =pxCurrentTCB\n ldr r2, [r3]\n"
        "tst lr, #0x10\n it eq\n vstmdbeq r0!, {s16-s31}\n"
        "stmdb r0!, {r4-r11, lr}\n"
        "str r0, [r2]\n"
        "push {r3, lr}\n"
        "bl vTaskSwitchContext\n"
        "pop {r3, lr}\n"
        "ldr r1, [r3]\n ldr r0, [r1]\n"
        "ldmia r0!, {r4-r11, lr}\n"
        "tst lr, #0x10\n it eq\n vldmiaeq r0!, {s16-s31}\n"
        "msr psp, r0\n isb\n"
        "bx lr\n");
}

/* The first task, as vPortSVCHandler starts it. */
__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile(
        "ldr r3, =pxCurrentTCB\n ldr r1, [r3]\n ldr r0, [r1]\n"
        "ldmia r0!, {r4-r11, lr}\n"
        "msr psp, r0\n isb\n"
        "bx lr\n");
}

static void task_exit_error(void) {
    exit_errors++;
    for (;;) ;
}

static void task_create(TCB_t *t, void (*fn)(void *), const char *name, UBaseType_t prio,
                        uint32_t *stack) {
    uint32_t *top = stack + STACK_WORDS;
    *--top = 0x01000000u;                       /* xPSR: Thumb */
    *--top = (uint32_t)fn & ~1u;                /* PC */
    *--top = (uint32_t)task_exit_error;         /* LR */
    for (int i = 0; i < 4; i++) *--top = 0;     /* r12, r3, r2, r1 */
    *--top = 0;                                 /* r0: the parameter */
    *--top = 0xFFFFFFFDu;                       /* EXC_RETURN: thread, PSP, no FP */
    for (int i = 0; i < 8; i++) *--top = 0;     /* r11..r4 */
    t->pxTopOfStack = top;
    t->pxStack = stack;
    t->uxPriority = prio;
    for (int i = 0; i < 15 && name[i]; i++) t->pcTaskName[i] = name[i];
    t->xStateListItem.pvOwner = t;
    t->xEventListItem.pvOwner = t;
    make_ready(t);
    uxCurrentNumberOfTasks++;
    pxCurrentTCB = t;
}

/* Give the CPU away with private values in r4-r11, s0 and s16 (and check
 * them when the task runs again). */
__attribute__((noinline)) void task_yield(uint32_t pattern) {
    uint32_t ok;
    __asm volatile(
        "vmov s0, %1\n vmov s16, %2\n"
        "mov r4, %1\n add r5, r4, #1\n add r6, r4, #2\n add r7, r4, #3\n"
        "add r8, r4, #4\n add r9, r4, #5\n add r10, r4, #6\n add r11, r4, #7\n"
        "ldr r0, =0xE000ED04\n mov r1, #0x10000000\n str r1, [r0]\n dsb\n isb\n"
        "mov %0, #1\n"
        "vmov r0, s0\n cmp r0, %1\n it ne\n movne %0, #0\n"
        "vmov r0, s16\n cmp r0, %2\n it ne\n movne %0, #0\n"
        "cmp r4, %1\n it ne\n movne %0, #0\n"
        "sub r0, r11, r4\n cmp r0, #7\n it ne\n movne %0, #0\n"
        : "=&r"(ok) : "r"(pattern), "r"(FLOAT_PATTERN)
        : "r0", "r1", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "s0", "s16", "memory");
    if (!ok) corrupt++;
}

/* Plain yield (no FP context): the switch then saves no s16-s31. */
__attribute__((noinline)) void task_yield_plain(void) {
    SCB_ICSR = 1u << 28;
    dsb_isb();
}

__attribute__((noinline)) void task_delay(TickType_t ticks, uint32_t pattern) {
    TCB_t *me = pxCurrentTCB;
    list_remove(&me->xStateListItem);
    me->xStateListItem.xItemValue = xTickCount + ticks;
    list_insert_sorted(pxDelayedTaskList, &me->xStateListItem);
    task_yield(pattern);
}

__attribute__((noinline)) void task_suspend_self(void) {
    TCB_t *me = pxCurrentTCB;
    list_remove(&me->xStateListItem);
    list_insert_end(&xSuspendedTaskList, &me->xStateListItem);
    task_yield_plain();
}

__attribute__((noinline)) void blinky_wait(TickType_t ticks) {
    task_delay(ticks, BLINKY_PATTERN + blinky_rounds);
}

static void blinky_task(void *arg) {
    for (;;) {
        blinky_rounds++;
        blinky_wait(7);
    }
}

__attribute__((noinline)) void worker_step(void) {
    worker_rounds++;
    task_suspend_self();
}

static void worker_task(void *arg) {
    for (;;)
        worker_step();
}

static void oneshot_task(void *arg) {
    oneshot_ran++;
    TCB_t *me = pxCurrentTCB;                   /* vTaskDelete(NULL) */
    list_remove(&me->xStateListItem);
    list_insert_end(&xTasksWaitingTermination, &me->xStateListItem);
    uxCurrentNumberOfTasks--;
    task_yield_plain();
    exit_errors++;                              /* never runs again */
    for (;;) ;
}

/* Where the tests stop: every other task is switched out. */
__attribute__((noinline)) void checkpoint(uint32_t n) {
    checkpoint_hits = n;
    for (uint32_t i = 0; i < 200000 && !checkpoint_release; i++)
        checkpoint_spins++;
    checkpoint_release = 0;
}

static void idle_task(void *arg) {
    uint32_t seen = 0;
    for (;;) {
        xTickCount++;
        List_t *d = pxDelayedTaskList;          /* wake what is due */
        while (d->uxNumberOfItems && d->xListEnd.pxNext->xItemValue <= xTickCount)
            make_ready(d->xListEnd.pxNext->pvOwner);
        if (xTickCount % 5 == 2 && xSuspendedTaskList.uxNumberOfItems)
            make_ready(xSuspendedTaskList.xListEnd.pxNext->pvOwner);
        if (xTickCount % CHECKPOINT_EVERY == 0 && seen < CHECKPOINTS)
            checkpoint(++seen);
        if (seen == CHECKPOINTS && xTickCount > CHECKPOINT_EVERY * CHECKPOINTS + 2)
            break;
        task_yield_plain();
    }
    semihost_puts("blinky="); put_dec(blinky_rounds);
    semihost_puts(" worker="); put_dec(worker_rounds);
    semihost_puts(" ticks="); put_dec(xTickCount);
    semihost_puts("\n");
    CHECK_EQ("registers survive every switch", corrupt, 0);
    CHECK("blinky ran and slept", blinky_rounds > 10);
    CHECK("worker ran and was resumed", worker_rounds > 10);
    CHECK_EQ("oneshot ran once", oneshot_ran, 1);
    CHECK_EQ("no task returned", exit_errors, 0);
    CHECK_EQ("tasks left", uxCurrentNumberOfTasks, 3);
    semihost_exit(harness_failures);
}

int main(void) {
    for (int p = 0; p < PRIORITIES; p++) list_init(&pxReadyTasksLists[p]);
    list_init(&xDelayedTaskList1);
    list_init(&xDelayedTaskList2);
    list_init(&xPendingReadyList);
    list_init(&xSuspendedTaskList);
    list_init(&xTasksWaitingTermination);
    task_create(&tcb_idle, idle_task, "IDLE", 0, stack_idle);
    task_create(&tcb_oneshot, oneshot_task, "oneshot", 1, stack_oneshot);
    task_create(&tcb_blinky, blinky_task, "blinky", 1, stack_blinky);
    task_create(&tcb_worker, worker_task, "worker", 2, stack_worker);
    SCB_SHPR8(14) = 0xFF;                      /* PendSV: the lowest priority */
    xSchedulerRunning = 1;
    __asm volatile("svc 0");
    return 99;                                  /* never */
}
