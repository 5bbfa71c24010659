/// What a matcher has written, for `uniqueItems` arrays: the output's bytes, and the sets
/// of items the arrays' frames hold, each a link to a smaller set.
///
///     set 0: {}        set 1: {"a"} = 0 + "a"        set 2: {"a", "b"} = 1 + "b"
///
/// A `distinct-items` frame's count is the number of its set; a `distinct-item` frame's count
/// is the offset in `text` where its item began. Sets are interned (the same set reached
/// twice has one number, so configurations stay deduplicated) and never removed: a rollback
/// leaves numbers that no frame uses.
struct WrittenItems: Sendable {
    /// One set: the set `parent` with `value` (an item's key) added.
    struct Link: Hashable, Sendable {
        var parent: Int32
        var value: [UInt8]
    }

    /// The bytes accepted so far.
    var text: [UInt8] = []
    /// The sets, by number; entry 0 stands for the empty set.
    private(set) var sets: [Link] = [Link(parent: -1, value: [])]
    private var numbers: [Link: Int32] = [:]

    /// The number of set `items` with `key` added; `nil` when `items` holds it already.
    ///
    /// - Complexity: O(items in the set × key length).
    mutating func adding(_ key: [UInt8], to items: Int32) -> Int32? {
        if Self.set(items, holds: key, link: { sets[Int($0)] }) { return nil }
        let link = Link(parent: items, value: key)
        if let known = numbers[link] { return known }
        let number = Int32(sets.count)
        sets.append(link)
        numbers[link] = number
        return number
    }

    /// Whether set `number` holds `key`, its links read through `link`.
    static func set(_ number: Int32, holds key: [UInt8], link: (Int32) -> Link) -> Bool {
        var number = number
        while number > 0 {
            let entry = link(number)
            if entry.value == key { return true }
            number = entry.parent
        }
        return false
    }

    /// The key two items share exactly when they are equal JSON values: a string's characters
    /// (escapes read), a number's text (the grammar writes an item's numbers in their shortest
    /// spelling only, and refuses number literals there), other scalars as written. `nil`
    /// when `item` is not one JSON value.
    static func key(of item: some Collection<UInt8>) -> [UInt8]? {
        guard let first = item.first else { return nil }
        guard first == UInt8(ascii: "\"") else { return [UInt8(ascii: "=")] + item }
        guard case .string(let text)? = try? JSONValue(parsing: Array(item)) else { return nil }
        return [UInt8(ascii: "\"")] + Array(text.utf8)
    }
}
