/// JSON Pointer (RFC 6901) reference tokens: how the compiler's errors, `$ref`s and
/// `GeneratedContentError` name a place in a document (`/items/0/name`).
public enum JSONPointer {
    /// `token` as one reference token of a pointer: `~` as `~0`, `/` as `~1`.
    public static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return token }
        return token.replacing("~", with: "~0").replacing("/", with: "~1")
    }

    /// The text one escaped reference token stands for (`~1` as `/`, then `~0` as `~`).
    public static func unescape(_ token: String) -> String {
        guard token.utf8.contains(UInt8(ascii: "~")) else { return token }
        return token.replacing("~1", with: "/").replacing("~0", with: "~")
    }

    /// Percent-decoding of a URI fragment (`#/$defs/a%20b`).
    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
               let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
