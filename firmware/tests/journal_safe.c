/* A journaling writer that survives a power cut at any flash operation
 * (firmware/common/journal.h): two slots per store, the newest kept. */
#include "journal.h"
HARNESS_STATE

int main(void) { return journal_main(); }
