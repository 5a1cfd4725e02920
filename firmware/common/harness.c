#include "harness.h"
int harness_failures;
