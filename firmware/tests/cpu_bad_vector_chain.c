#define CHAIN 1
#include "cpu_bad_vector.c"
