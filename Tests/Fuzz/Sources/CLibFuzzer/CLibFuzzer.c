// Declarations only; the definition comes from libFuzzer, linked by -sanitize=fuzzer.
#include "CLibFuzzer.h"
