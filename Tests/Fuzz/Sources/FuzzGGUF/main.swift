import CLibFuzzer
import GGUF
import TypesetTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The fuzz target: parses the input as a GGUF file in place and, when it parses, touches
// everything a consumer could (every array element, every accessor, the first and last byte
// of every tensor), then loads it as a model (configuration, weights' shapes and types, rows
// decoded). Any trap, crash or sanitizer report is a bug in the reader or the loader.
//
// libFuzzer runs through its driver API rather than its own `main`, because SwiftPM links
// executables to a module-specific entry point.
var argumentCount = CommandLine.argc
var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argumentCount, &arguments) { data, size in
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? GGUFFile.withBorrowedBytes(bytes) { file in
        GGUFChecks.exercise(file, deep: true)
        GGUFChecks.exerciseAsModel(file)
    }
    return 0
})
