extension DecimalNumber {
    /// The spellings of this value an `enum`/`const` literal accepts: the plain decimal
    /// (`-12.5`, `300`), and for whole numbers also with `.0` (`300.0`), which is how
    /// Python's `json.dumps` writes a whole float. Exponent spellings are not accepted.
    var spellings: [String] {
        let sign = isNegative ? "-" : ""
        let integerText = integerPartDigits.isEmpty ? "0" : String(decoding: integerPartDigits.map { $0 + 0x30 }, as: UTF8.self)
        if isInteger {
            return [sign + integerText, sign + integerText + ".0"]
        }
        return [sign + integerText + "." + String(decoding: fractionPartDigits.map { $0 + 0x30 }, as: UTF8.self)]
    }

    /// Whether `self / divisor` is a whole number. Decided for values and divisors that fit
    /// in 64-bit integers once scaled to a common number of fraction digits (up to 18);
    /// otherwise `false` (callers treat that as "cannot tell").
    func isMultiple(of divisor: DecimalNumber) -> Bool {
        let scale = max(0, -exponent, -divisor.exponent)
        guard scale <= 18, let value = scaled(by: scale), let step = divisor.scaled(by: scale), step != 0 else { return false }
        return value % step == 0
    }

    private func scaled(by digits: Int) -> Int? {
        let shifted = DecimalNumber(isNegative: isNegative, significand: significand, exponent: exponent + digits)
        return shifted.exactInteger
    }
}
