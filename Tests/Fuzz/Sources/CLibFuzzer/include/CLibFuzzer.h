// libFuzzer's driver entry point (LLVM 12 and later), for programs that keep their own main.
#ifndef TYPESET_CLIBFUZZER_H
#define TYPESET_CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif
