import Foundation

/// A constraint on the values generated for one property: a numeric range, an array length,
/// a set of allowed strings, a pattern.
///
/// Guides are enforced during decoding, not merely described to the model: a property guided
/// by `.range(1...5)` can only be generated as 1, 2, 3, 4 or 5. Each guide is available for the
/// value types it makes sense for, so a misplaced guide does not compile:
///
/// | Guide | Value |
/// |---|---|
/// | `.range(_:)`, `.minimum(_:)`, `.maximum(_:)` | integers of every width, `Double`, `Float`, `Decimal` |
/// | `.anyOf(_:)`, `.constant(_:)`, `.pattern(_:)` | `String` |
/// | `.count(_:)` (a number or a range), `.minimumCount(_:)`, `.maximumCount(_:)`, `.element(_:)` | arrays |
///
/// Several guides on one property combine (the tightest bound wins).
public struct GenerationGuide<Value>: Sendable {
    let constraints: [GuideConstraint]

    init(_ constraints: [GuideConstraint]) { self.constraints = constraints }
}

/// One constraint, independent of the guided type. Numeric bounds are JSON number text, so
/// that `Decimal` and 64-bit bounds stay exact.
enum GuideConstraint: Sendable, Hashable {
    case minimum(String)
    case maximum(String)
    case anyOf([String])
    case constant(String)
    /// An ECMAScript regular expression (the JSON Schema `pattern` dialect).
    case pattern(String)
    case minimumCount(Int)
    case maximumCount(Int)
    case element([GuideConstraint])
}

// MARK: Numbers

extension GenerationGuide where Value: FixedWidthInteger {
    /// Values in `range` (both ends included).
    public static func range(_ range: ClosedRange<Value>) -> Self {
        Self([.minimum(String(range.lowerBound)), .maximum(String(range.upperBound))])
    }
    /// Values no less than `value`.
    public static func minimum(_ value: Value) -> Self { Self([.minimum(String(value))]) }
    /// Values no greater than `value`.
    public static func maximum(_ value: Value) -> Self { Self([.maximum(String(value))]) }
}

extension GenerationGuide where Value: BinaryFloatingPoint {
    /// Values in `range` (both ends included). The bounds must be finite.
    public static func range(_ range: ClosedRange<Value>) -> Self {
        Self([.minimum(numberText(range.lowerBound)), .maximum(numberText(range.upperBound))])
    }
    /// Values no less than `value`.
    public static func minimum(_ value: Value) -> Self { Self([.minimum(numberText(value))]) }
    /// Values no greater than `value`.
    public static func maximum(_ value: Value) -> Self { Self([.maximum(numberText(value))]) }
}

extension GenerationGuide where Value == Decimal {
    /// Values in `range` (both ends included), exactly.
    public static func range(_ range: ClosedRange<Decimal>) -> Self {
        Self([.minimum(numberText(range.lowerBound)), .maximum(numberText(range.upperBound))])
    }
    /// Values no less than `value`.
    public static func minimum(_ value: Decimal) -> Self { Self([.minimum(numberText(value))]) }
    /// Values no greater than `value`.
    public static func maximum(_ value: Decimal) -> Self { Self([.maximum(numberText(value))]) }
}

/// JSON number text for a finite binary floating-point value (non-finite values, which JSON
/// cannot spell, bound nothing: they become the widest finite value of `Double`).
package func numberText<Value: BinaryFloatingPoint>(_ value: Value) -> String {
    let double = Double(value)
    guard double.isFinite else { return double < 0 ? "-1.7976931348623157e308" : "1.7976931348623157e308" }
    return double.description.replacingOccurrences(of: "e+", with: "e")
}

package func numberText(_ value: Decimal) -> String { value.description }

// MARK: Strings

extension GenerationGuide where Value == String {
    /// Exactly `value`.
    public static func constant(_ value: String) -> Self { Self([.constant(value)]) }
    /// One of `choices`.
    public static func anyOf(_ choices: [String]) -> Self { Self([.anyOf(choices)]) }
    /// Strings that match `pattern`, an ECMAScript regular expression (JSON Schema's
    /// `pattern` dialect: unanchored unless it says `^…$`). In `@Guide` a Swift regex literal
    /// (`/^[A-Z]{3}$/`) may be given instead; the macro reads its text.
    public static func pattern(_ pattern: String) -> Self { Self([.pattern(pattern)]) }
}

// MARK: Arrays

extension GenerationGuide {
    /// Exactly `count` elements.
    public static func count<Element>(_ count: Int) -> Self where Value == [Element] {
        Self([.minimumCount(count), .maximumCount(count)])
    }
    /// A number of elements in `range`.
    public static func count<Element>(_ range: ClosedRange<Int>) -> Self where Value == [Element] {
        Self([.minimumCount(range.lowerBound), .maximumCount(range.upperBound)])
    }
    /// At least `count` elements.
    public static func minimumCount<Element>(_ count: Int) -> Self where Value == [Element] { Self([.minimumCount(count)]) }
    /// At most `count` elements.
    public static func maximumCount<Element>(_ count: Int) -> Self where Value == [Element] { Self([.maximumCount(count)]) }
    /// Every element follows `guide`.
    public static func element<Element>(_ guide: GenerationGuide<Element>) -> Self where Value == [Element] {
        Self([.element(guide.constraints)])
    }
}

// MARK: The @Guide attribute

/// The spellings of the guides inside a `@Guide` attribute: `.range(1...5)`, `.count(3)`,
/// `.element(.anyOf(["a", "b"]))`, `.pattern(/[A-Z]{3}/)`, ….
///
/// An attribute's arguments are type-checked before the property's type is known, so these
/// accept every guide's spelling; `@Generable` re-reads them where the type is known, as a
/// `GenerationGuide` of the property's type, and reports a guide that does not fit. They
/// constrain nothing on their own: no API takes a `GenerationGuide<Any>`.
extension GenerationGuide where Value == Any {
    public static func range(_ range: ClosedRange<Int>) -> Self { Self([]) }
    public static func range(_ range: ClosedRange<Double>) -> Self { Self([]) }
    public static func range<Number: BinaryInteger>(_ range: ClosedRange<Number>) -> Self { Self([]) }
    public static func range<Number: BinaryFloatingPoint>(_ range: ClosedRange<Number>) -> Self { Self([]) }
    public static func range(_ range: ClosedRange<Decimal>) -> Self { Self([]) }
    public static func minimum(_ value: Int) -> Self { Self([]) }
    public static func minimum(_ value: Double) -> Self { Self([]) }
    public static func minimum<Number: BinaryInteger>(_ value: Number) -> Self { Self([]) }
    public static func minimum<Number: BinaryFloatingPoint>(_ value: Number) -> Self { Self([]) }
    public static func minimum(_ value: Decimal) -> Self { Self([]) }
    public static func maximum(_ value: Int) -> Self { Self([]) }
    public static func maximum(_ value: Double) -> Self { Self([]) }
    public static func maximum<Number: BinaryInteger>(_ value: Number) -> Self { Self([]) }
    public static func maximum<Number: BinaryFloatingPoint>(_ value: Number) -> Self { Self([]) }
    public static func maximum(_ value: Decimal) -> Self { Self([]) }
    public static func constant(_ value: String) -> Self { Self([]) }
    public static func anyOf(_ choices: [String]) -> Self { Self([]) }
    public static func pattern(_ pattern: String) -> Self { Self([]) }
    /// A Swift regex literal; `@Generable` reads its text (a `Regex` does not expose it).
    public static func pattern<Output>(_ regex: Regex<Output>) -> Self { Self([]) }
    public static func count(_ count: Int) -> Self { Self([]) }
    public static func count(_ range: ClosedRange<Int>) -> Self { Self([]) }
    public static func minimumCount(_ count: Int) -> Self { Self([]) }
    public static func maximumCount(_ count: Int) -> Self { Self([]) }
    public static func element(_ guide: Self) -> Self { Self([]) }
}
