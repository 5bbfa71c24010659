import ArgumentParser

// One set of checks for the numeric flags every command shares, so `--threads 0` or
// `--temperature nan` is the same usage error whichever command it is given to.

/// Throws a usage error unless `value` (when given) is a finite number within the bounds.
func validateNumber<Number: BinaryFloatingPoint>(
    _ value: Number?, _ flag: String, above exclusiveMinimum: Number? = nil, atLeast minimum: Number? = nil,
    atMost maximum: Number? = nil
) throws {
    guard let value else { return }
    var bounds: [String] = []
    if let exclusiveMinimum { bounds.append("> \(Double(exclusiveMinimum).formatted)") }
    if let minimum { bounds.append("≥ \(Double(minimum).formatted)") }
    if let maximum { bounds.append("≤ \(Double(maximum).formatted)") }
    let valid = value.isFinite
        && exclusiveMinimum.map { value > $0 } ?? true
        && minimum.map { value >= $0 } ?? true
        && maximum.map { value <= $0 } ?? true
    guard valid else {
        throw ValidationError("\(flag) must be a number" + (bounds.isEmpty ? "" : " " + bounds.joined(separator: " and ")))
    }
}

/// Throws a usage error unless `value` (when given) is at least `minimum`.
func validateCount(_ value: Int?, _ flag: String, atLeast minimum: Int = 1, atMost maximum: Int = .max) throws {
    guard let value else { return }
    guard value >= minimum, value <= maximum else {
        throw ValidationError(maximum == .max ? "\(flag) must be at least \(minimum)" : "\(flag) must be between \(minimum) and \(maximum)")
    }
}

/// `--threads`: one to 1,024 threads for the matrix products.
func validateThreads(_ threads: Int?) throws {
    try validateCount(threads, "--threads", atLeast: 1, atMost: 1024)
}

private extension Double {
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}
