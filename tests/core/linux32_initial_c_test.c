// tests/support/linux32_checks.h with KT_LINUX_INITIAL_JIFFIES: jiffies
// starts at INITIAL_JIFFIES, five minutes before the 32-bit wrap, as in the
// kernel. Plain C: prints "N passed, N failed".
#define KT_LINUX_INITIAL_JIFFIES 1

#include "tests/support/linux32_checks.h"

int main(void) { return run_linux32_checks(); }
