// <ktimer/linux.h> and the struct timespec conversions as a 32-bit caller
// sees them, with jiffies the base's clock: the checks are in
// tests/support/linux32_checks.h (linux32_initial_c_test runs them with
// jiffies started five minutes before the 32-bit wrap). Plain C: prints
// "N passed, N failed".
#include "tests/support/linux32_checks.h"

int main(void) { return run_linux32_checks(); }
