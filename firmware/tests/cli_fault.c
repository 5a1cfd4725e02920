/* Used by the CLI tests: a firmware that reads an unmapped address and has
 * no fault handler of its own (the default handler spins), so the emulator
 * must report the fault with PC and symbol and exit non-zero. */
#include "harness.h"

__attribute__((noinline)) uint32_t read_bad_address(void) {
    return REG32(0x60000000);
}

int main(void) {
    semihost_puts("about to fault\n");
    return (int)read_bad_address();
}
