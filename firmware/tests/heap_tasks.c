/* Structures laid out as FreeRTOS's heap_4 and task lists, and as
 * MicroPython's GC tables, under their symbol names: our own small code, so
 * that emu/inspect's readers are tested without InfiniTime or wasp-os
 * (tests/machine/test_inspect.py).
 *   heap: a first-fit allocator over ucHeap with heap_4's BlockLink_t free
 *         list in address order (xStart ... *pxEnd), xFreeBytesRemaining,
 *         xMinimumEverFreeBytesRemaining; four allocations, two freed;
 *   tasks: five TCBs (tskTaskControlBlock: FreeRTOS 10's member order) in
 *         pxReadyTasksLists, xDelayedTaskList1 and xSuspendedTaskList, each
 *         with a 0xA5-filled stack of which a known part was used;
 *   GC:   mp_state_ctx.mem's allocation table (2 bits a block) and pool.
 * It prints what it expects the readers to find ("EXPECT name value"). */
#include <stddef.h>
#include "harness.h"
HARNESS_STATE

/* ------------------------------------------------------------- heap_4 */
typedef struct A_BLOCK_LINK {
    struct A_BLOCK_LINK *pxNextFreeBlock;
    size_t xBlockSize;
} BlockLink_t;

#define HEAP_SIZE 4096
#define ALLOCATED (1u << 31)
static const size_t xHeapStructSize = (sizeof(BlockLink_t) + 7) & ~7u;
uint8_t ucHeap[HEAP_SIZE] __attribute__((aligned(8)));
BlockLink_t xStart, *pxEnd;
size_t xFreeBytesRemaining, xMinimumEverFreeBytesRemaining;

static void heap_init(void) {
    uint8_t *p = ucHeap;
    xStart.pxNextFreeBlock = (BlockLink_t *)p;
    xStart.xBlockSize = 0;
    pxEnd = (BlockLink_t *)(p + HEAP_SIZE - xHeapStructSize);
    pxEnd->xBlockSize = 0;
    pxEnd->pxNextFreeBlock = NULL;
    BlockLink_t *first = (BlockLink_t *)p;
    first->xBlockSize = (size_t)((uint8_t *)pxEnd - p);
    first->pxNextFreeBlock = pxEnd;
    xFreeBytesRemaining = xMinimumEverFreeBytesRemaining = first->xBlockSize;
}

static void insert_free(BlockLink_t *b) {
    BlockLink_t *it = &xStart;
    while (it->pxNextFreeBlock < b) it = it->pxNextFreeBlock;
    if (it != &xStart && (uint8_t *)it + it->xBlockSize == (uint8_t *)b) {
        it->xBlockSize += b->xBlockSize;          /* merge with the block before */
        b = it;
    }
    BlockLink_t *next = it->pxNextFreeBlock;
    if (next != pxEnd && (uint8_t *)b + b->xBlockSize == (uint8_t *)next) {
        b->xBlockSize += next->xBlockSize;        /* and with the one after */
        b->pxNextFreeBlock = next->pxNextFreeBlock;
    } else {
        b->pxNextFreeBlock = next;
    }
    if (b != it) it->pxNextFreeBlock = b;
}

static void *heap_alloc(size_t want) {
    want = (want + xHeapStructSize + 7) & ~7u;
    BlockLink_t *prev = &xStart, *b = xStart.pxNextFreeBlock;
    while (b->xBlockSize < want && b->pxNextFreeBlock != NULL) { prev = b; b = b->pxNextFreeBlock; }
    if (b == pxEnd) return NULL;
    prev->pxNextFreeBlock = b->pxNextFreeBlock;
    if (b->xBlockSize - want > 2 * xHeapStructSize) {
        BlockLink_t *rest = (BlockLink_t *)((uint8_t *)b + want);
        rest->xBlockSize = b->xBlockSize - want;
        b->xBlockSize = want;
        insert_free(rest);
    }
    xFreeBytesRemaining -= b->xBlockSize;
    if (xFreeBytesRemaining < xMinimumEverFreeBytesRemaining)
        xMinimumEverFreeBytesRemaining = xFreeBytesRemaining;
    b->xBlockSize |= ALLOCATED;
    b->pxNextFreeBlock = NULL;
    return (uint8_t *)b + xHeapStructSize;
}

static void heap_free(void *p) {
    BlockLink_t *b = (BlockLink_t *)((uint8_t *)p - xHeapStructSize);
    b->xBlockSize &= ~ALLOCATED;
    xFreeBytesRemaining += b->xBlockSize;
    insert_free(b);
}

/* -------------------------------------------------------------- tasks */
struct xLIST;
typedef struct xLIST_ITEM {
    uint32_t xItemValue;
    struct xLIST_ITEM *pxNext, *pxPrevious;
    void *pvOwner;
    struct xLIST *pvContainer;
} ListItem_t;
typedef struct xMINI_LIST_ITEM {
    uint32_t xItemValue;
    struct xLIST_ITEM *pxNext, *pxPrevious;
} MiniListItem_t;
typedef struct xLIST {
    uint32_t uxNumberOfItems;
    ListItem_t *pxIndex;
    MiniListItem_t xListEnd;
} List_t;
typedef struct tskTaskControlBlock {
    volatile uint32_t *pxTopOfStack;
    ListItem_t xStateListItem;
    ListItem_t xEventListItem;
    uint32_t uxPriority;
    uint32_t *pxStack;
    char pcTaskName[8];
    uint32_t *pxEndOfStack;
} tskTCB;

#define PRIOS 3
List_t pxReadyTasksLists[PRIOS];
List_t xDelayedTaskList1, xDelayedTaskList2, xPendingReadyList, xSuspendedTaskList,
       xTasksWaitingTermination;
List_t *volatile pxDelayedTaskList = &xDelayedTaskList1;
tskTCB *volatile pxCurrentTCB;
static List_t some_queue;               /* an event list a blocked task waits on */

#define STACK_WORDS 64
static tskTCB tcbs[5];
static uint32_t stacks[5][STACK_WORDS];

static void list_init(List_t *l) {
    l->uxNumberOfItems = 0;
    l->pxIndex = (ListItem_t *)&l->xListEnd;
    l->xListEnd.xItemValue = 0xFFFFFFFF;
    l->xListEnd.pxNext = l->xListEnd.pxPrevious = (ListItem_t *)&l->xListEnd;
}

static void list_append(List_t *l, ListItem_t *it) {
    ListItem_t *end = (ListItem_t *)&l->xListEnd;
    it->pxNext = end;
    it->pxPrevious = end->pxPrevious;
    end->pxPrevious->pxNext = it;
    end->pxPrevious = it;
    it->pvContainer = l;
    l->uxNumberOfItems++;
}

static void task(int i, const char *name, uint32_t prio, List_t *l, List_t *event, int used) {
    tskTCB *t = &tcbs[i];
    uint8_t *s = (uint8_t *)stacks[i];
    for (int k = 0; k < STACK_WORDS * 4; k++) s[k] = 0xA5;
    for (int k = STACK_WORDS * 4 - used; k < STACK_WORDS * 4; k++) s[k] = (uint8_t)k;
    t->pxStack = stacks[i];
    t->pxEndOfStack = &stacks[i][STACK_WORDS - 1];
    t->pxTopOfStack = (uint32_t *)(s + STACK_WORDS * 4 - used);
    t->uxPriority = prio;
    for (int k = 0; k < 8; k++) t->pcTaskName[k] = 0;
    for (int k = 0; k < 7 && name[k]; k++) t->pcTaskName[k] = name[k];
    t->xStateListItem.pvOwner = t;
    t->xEventListItem.pvOwner = t;
    t->xEventListItem.pvContainer = 0;
    if (l) list_append(l, &t->xStateListItem);
    if (event) list_append(event, &t->xEventListItem);
}

/* --------------------------------------------------- MicroPython's GC */
typedef uint8_t byte;
typedef struct _mp_state_mem_t {
    size_t total_bytes_allocated;
    byte *gc_alloc_table_start;
    size_t gc_alloc_table_byte_len;
    byte *gc_finaliser_table_start;
    byte *gc_pool_start;
    byte *gc_pool_end;
    int gc_stack_overflow;
} mp_state_mem_t;
typedef struct _mp_state_ctx_t {
    uint32_t thread[5];
    uint32_t vm[33];
    mp_state_mem_t mem;
} mp_state_ctx_t;
mp_state_ctx_t mp_state_ctx;
#define GC_ATB 8                         /* 32 blocks of 16 bytes */
static byte gc_area[GC_ATB + GC_ATB / 8 + GC_ATB * 4 * 16 + 16];

static void put(const char *name, uint32_t v) {
    semihost_puts("EXPECT ");
    semihost_puts(name);
    semihost_puts(" ");
    put_dec(v);
    semihost_puts("\n");
}

int main(void) {
    heap_init();
    void *a = heap_alloc(100), *b = heap_alloc(200), *c = heap_alloc(300), *d = heap_alloc(50);
    (void)a; (void)c;
    heap_free(b);
    heap_free(d);                          /* merges with the tail */
    size_t largest = 0, blocks = 0;
    for (BlockLink_t *it = xStart.pxNextFreeBlock; it != pxEnd; it = it->pxNextFreeBlock) {
        blocks++;
        if (it->xBlockSize > largest) largest = it->xBlockSize;
    }
    put("heap.free", xFreeBytesRemaining);
    put("heap.min_ever_free", xMinimumEverFreeBytesRemaining);
    put("heap.largest_free", largest);
    put("heap.free_blocks", blocks);

    for (int p = 0; p < PRIOS; p++) list_init(&pxReadyTasksLists[p]);
    list_init(&xDelayedTaskList1); list_init(&xDelayedTaskList2);
    list_init(&xPendingReadyList); list_init(&xSuspendedTaskList);
    list_init(&xTasksWaitingTermination); list_init(&some_queue);
    task(0, "main", 1, &pxReadyTasksLists[1], 0, 40);
    task(1, "IDLE", 0, &pxReadyTasksLists[0], 0, 24);
    task(2, "sensor", 2, &xDelayedTaskList1, 0, 100);
    task(3, "waiter", 1, &xSuspendedTaskList, &some_queue, 64);
    task(4, "paused", 0, &xSuspendedTaskList, 0, 200);
    pxCurrentTCB = &tcbs[0];

    byte *atb = (byte *)(((uint32_t)gc_area + 3) & ~3u);
    byte *fin = atb + GC_ATB;
    byte *pool = (byte *)(((uint32_t)(fin + GC_ATB / 8) + 15) & ~15u);
    for (int k = 0; k < GC_ATB; k++) atb[k] = 0;
    /* blocks: 0 head, 1-2 tail, 3 free, 4 head, 5..9 free, 10 head, 11 tail, rest free */
    static const uint8_t kinds[12] = {1, 2, 2, 0, 1, 0, 0, 0, 0, 0, 1, 2};
    for (int blk = 0; blk < 12; blk++) atb[blk / 4] |= kinds[blk] << (2 * (blk % 4));
    mp_state_ctx.mem.gc_alloc_table_start = atb;
    mp_state_ctx.mem.gc_alloc_table_byte_len = GC_ATB;
    mp_state_ctx.mem.gc_finaliser_table_start = fin;
    mp_state_ctx.mem.gc_pool_start = pool;
    mp_state_ctx.mem.gc_pool_end = pool + GC_ATB * 4 * 16;
    put("gc.total", GC_ATB * 4 * 16);
    put("gc.used", 6 * 16);
    put("gc.free", 26 * 16);
    put("gc.largest_free", 20 * 16);
    put("gc.allocations", 3);
    semihost_puts("MARK ready\n");
    return harness_failures;
}
