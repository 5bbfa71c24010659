import Foundation

// MARK: - strftime_now

/// A C/Python `strftime` for the directives chat templates use (`strftime_now("%d %b %Y")`),
/// in the C locale. Supports the glibc `-` flag (`%-d`: no padding). Unknown directives are
/// copied through unchanged.
enum DateFormatting {
    private static let weekdayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let monthNames = [
        "January", "February", "March", "April", "May", "June",
        "July", "August", "September", "October", "November", "December",
    ]

    static func strftime(_ format: String, date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let year = parts.year ?? 1970
        let month = parts.month ?? 1
        let day = parts.day ?? 1
        let hour = parts.hour ?? 0
        let minute = parts.minute ?? 0
        let second = parts.second ?? 0
        let weekday = (parts.weekday ?? 1) - 1  // 0 = Sunday
        let dayOfYear = calendar.ordinality(of: .day, in: .year, for: date) ?? 1
        let offsetSeconds = timeZone.secondsFromGMT(for: date)

        func padded(_ value: Int, _ width: Int, _ pad: Bool) -> String {
            let digits = String(abs(value))
            let sign = value < 0 ? "-" : ""
            guard pad, digits.count < width else { return sign + digits }
            return sign + String(repeating: "0", count: width - digits.count) + digits
        }

        var result = ""
        var iterator = format.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            guard scalar == "%" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            guard var directive = iterator.next() else {
                result += "%"
                break
            }
            var pad = true
            if directive == "-" {
                pad = false
                guard let next = iterator.next() else {
                    result += "%-"
                    break
                }
                directive = next
            }
            switch directive {
            case "a": result += String(weekdayNames[weekday].prefix(3))
            case "A": result += weekdayNames[weekday]
            case "b", "h": result += String(monthNames[month - 1].prefix(3))
            case "B": result += monthNames[month - 1]
            case "d": result += padded(day, 2, pad)
            case "e": result += pad && day < 10 ? " \(day)" : String(day)
            case "H": result += padded(hour, 2, pad)
            case "I": result += padded(hour % 12 == 0 ? 12 : hour % 12, 2, pad)
            case "j": result += padded(dayOfYear, 3, pad)
            case "m": result += padded(month, 2, pad)
            case "M": result += padded(minute, 2, pad)
            case "p": result += hour < 12 ? "AM" : "PM"
            case "S": result += padded(second, 2, pad)
            case "w": result += String(weekday)
            case "u": result += String(weekday == 0 ? 7 : weekday)
            case "y": result += padded(year % 100, 2, pad)
            case "Y": result += String(year)
            case "C": result += padded(year / 100, 2, pad)
            case "F": result += "\(year)-\(padded(month, 2, true))-\(padded(day, 2, true))"
            case "T": result += "\(padded(hour, 2, true)):\(padded(minute, 2, true)):\(padded(second, 2, true))"
            case "D": result += "\(padded(month, 2, true))/\(padded(day, 2, true))/\(padded(year % 100, 2, true))"
            case "R": result += "\(padded(hour, 2, true)):\(padded(minute, 2, true))"
            case "z":
                let sign = offsetSeconds < 0 ? "-" : "+"
                let minutes = abs(offsetSeconds) / 60
                result += sign + padded(minutes / 60, 2, true) + padded(minutes % 60, 2, true)
            case "Z": result += timeZone.abbreviation(for: date) ?? ""
            case "n": result += "\n"
            case "t": result += "\t"
            case "%": result += "%"
            default:
                result += pad ? "%" : "%-"
                result.unicodeScalars.append(directive)
            }
        }
        return result
    }
}
