/* rtt_echo.c with the control block's id written wrong: no probe finds it. */
#define RTT_ID "SEGGER RTX"
#include "rtt_echo.c"
