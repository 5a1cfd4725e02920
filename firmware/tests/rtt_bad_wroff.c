/* rtt_echo.c with a WrOff beyond the Log ring: the probe must report it. */
#define RTT_BAD_WROFF 1
#include "rtt_echo.c"
