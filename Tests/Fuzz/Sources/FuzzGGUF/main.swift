import CLibFuzzer
import GGUF

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The fuzz target: parses the input as a GGUF file in place and, when it parses, touches
// everything a consumer could (every array element, every accessor, the first and last byte
// of every tensor). Any trap, crash or sanitizer report is a bug in the reader.
//
// libFuzzer runs through its driver API rather than its own `main`, because SwiftPM links
// executables to a module-specific entry point.
var argumentCount = CommandLine.argc
var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argumentCount, &arguments) { data, size in
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? GGUFFile.withBorrowedBytes(bytes) { file in exercise(file) }
    return 0
})

private func exercise(_ file: GGUFFile) {
    var checksum = file.dataSectionOffset &+ file.alignment
    for entry in file.metadata {
        checksum &+= entry.key.utf8.count
        if case let .array(array) = entry.value { checksum &+= walk(array) }
    }
    _ = try? file.metadata.architecture
    _ = try? file.metadata.hyperparameters.contextLength
    _ = try? file.metadata.tokenizer.scores
    _ = try? file.metadata.tokenizer.tokenTypes
    _ = try? file.metadata.tokenizer.merges?.strings()
    for tensor in file.tensors where tensor.bytes.count > 0 {
        checksum &+= Int(tensor.bytes[0]) &+ Int(tensor.bytes[tensor.bytes.count - 1])
        if tensor.info.rowCount > 0 { checksum &+= tensor.row(tensor.info.rowCount - 1).count }
    }
    if checksum == 0x5eed { print("") }   // keep the work observable
}

private func walk(_ array: GGUFArray) -> Int {
    var total = 0
    for element in array {
        switch element {
        case let .array(inner): total &+= walk(inner)
        case let .string(string): total &+= string.utf8.count
        default: total &+= 1
        }
    }
    array.forEachStringBytes { _, bytes in total &+= bytes.count }
    total &+= array.integers()?.count ?? 0
    total &+= array.floats()?.count ?? 0
    return total
}
