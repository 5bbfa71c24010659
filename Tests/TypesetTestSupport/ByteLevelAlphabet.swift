/// GPT-2's byte-level alphabet: the text of each byte's token (printable Latin-1 bytes as
/// themselves, the others shifted to U+0100 and up), for tests that build byte-level
/// vocabularies.
public let gpt2ByteAlphabet: [String] = {
    var result: [String] = []
    var shifted: UInt32 = 0x100
    for byte in 0 ..< 256 {
        if (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte) {
            result.append(String(UnicodeScalar(UInt8(byte))))
        } else {
            result.append(String(UnicodeScalar(shifted)!))
            shifted += 1
        }
    }
    return result
}()
