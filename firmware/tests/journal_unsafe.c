/* The companion of journal_safe.c: one slot per store, erased and then
 * written: a power cut between the two loses the counter (the campaign in
 * tests/machine/test_powercut.py must catch it). */
#define JOURNAL_UNSAFE 1
#include "journal.h"
HARNESS_STATE

int main(void) { return journal_main(); }
