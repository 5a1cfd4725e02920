/* Used by the CLI tests: prints a line and exits with status 3. */
#include "harness.h"
int main(void) {
    semihost_puts("exiting with 3\n");
    return 3;
}
