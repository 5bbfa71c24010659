import Foundation

/// A grouped bar chart written as a standalone SVG document: categories along the x axis, one
/// bar per series in each, dashed horizontal reference lines (a measured bandwidth, a peer's
/// figure). What `typeset bench kernels --svg` and `typeset bench decode --svg` draw.
struct BarChart {
    struct Series {
        var name: String
        /// One value per category; `nil` leaves a gap.
        var values: [Double?]
    }

    struct Reference {
        var name: String
        var value: Double
    }

    var title: String
    var yLabel: String
    var categories: [String]
    var series: [Series]
    var references: [Reference] = []

    private static let palette = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"]

    /// The SVG text. Sizes in SVG user units (pixels): a 300-high plot, at least 400 wide, with
    /// margins fitted to the title and the category labels.
    func svg() -> String {
        let left = 70.0, top = 50.0, plotHeight = 300.0
        // Category labels are rotated 35° below the axis: about 6.2 units per character at 11
        // units, so a label of width w reaches 0.82 w to the right and 0.57 w down.
        let labelWidths = categories.map { 6.2 * Double($0.count) }
        let bottom = max(60, 30 + 0.57 * (labelWidths.max() ?? 0))
        let minimumGroupWidth = max(48.0, 18.0 * Double(max(1, series.count)) + 16)
        // Wide enough for the title (about 8 units per character in bold at 13 units) and the
        // last label; the groups share the plot's whole width.
        let plotWidth = max(minimumGroupWidth * Double(max(1, categories.count)), 8 * Double(title.count) + 40 - left, 400)
        let groupWidth = plotWidth / Double(max(1, categories.count))
        let right = max(20, 0.82 * (labelWidths.last ?? 0) - groupWidth / 2 + 10)
        let width = left + plotWidth + right
        let height = top + plotHeight + bottom
        let maximum = max(1e-9, (series.flatMap { $0.values.compactMap { $0 } } + references.map(\.value)).max() ?? 1)
        let scaleTop = Self.niceCeiling(maximum * 1.08)
        func y(_ value: Double) -> Double { top + plotHeight * (1 - value / scaleTop) }

        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
        viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="11">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(Int(width / 2))" y="22" text-anchor="middle" font-size="13" font-weight="bold">\(Self.escaped(title))</text>

        """
        // Grid and y axis.
        for step in 0 ... 5 {
            let value = scaleTop * Double(step) / 5
            let position = y(value)
            out += "<line x1=\"\(left)\" y1=\"\(position)\" x2=\"\(width - right)\" y2=\"\(position)\" stroke=\"#e5e5e5\"/>\n"
            out += "<text x=\"\(left - 6)\" y=\"\(position + 4)\" text-anchor=\"end\">\(String(format: "%g", value))</text>\n"
        }
        out += "<text transform=\"translate(16 \(top + plotHeight / 2)) rotate(-90)\" text-anchor=\"middle\">\(Self.escaped(yLabel))</text>\n"
        out += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(top + plotHeight)\" stroke=\"#333\"/>\n"
        out += "<line x1=\"\(left)\" y1=\"\(top + plotHeight)\" x2=\"\(width - right)\" y2=\"\(top + plotHeight)\" stroke=\"#333\"/>\n"
        // Bars.
        let barWidth = min(40, (groupWidth - 16) / Double(max(1, series.count)))
        for (index, category) in categories.enumerated() {
            let groupLeft = left + groupWidth * Double(index) + (groupWidth - barWidth * Double(max(1, series.count))) / 2
            for (number, item) in series.enumerated() {
                guard index < item.values.count, let value = item.values[index] else { continue }
                let x = groupLeft + barWidth * Double(number)
                let color = Self.palette[number % Self.palette.count]
                out += "<rect x=\"\(x)\" y=\"\(y(value))\" width=\"\(barWidth - 2)\" height=\"\(top + plotHeight - y(value))\" fill=\"\(color)\">"
                out += "<title>\(Self.escaped(item.name)), \(Self.escaped(category)): \(Self.format(value))</title></rect>\n"
            }
            let center = groupLeft + barWidth * Double(max(1, series.count)) / 2
            out += "<text transform=\"translate(\(center) \(top + plotHeight + 12)) rotate(35)\" text-anchor=\"start\">\(Self.escaped(category))</text>\n"
        }
        // Reference lines, labelled at the right end.
        for (number, reference) in references.enumerated() {
            let position = y(reference.value)
            out += "<line x1=\"\(left)\" y1=\"\(position)\" x2=\"\(width - right)\" y2=\"\(position)\" stroke=\"#222\" stroke-dasharray=\"6 4\"/>\n"
            out += "<text x=\"\(width - right - 4)\" y=\"\(position - 4 - 12 * Double(number % 2))\" text-anchor=\"end\">"
            out += "\(Self.escaped(reference.name)) \(Self.format(reference.value))</text>\n"
        }
        // Legend.
        var legendX = left
        for (number, item) in series.enumerated() {
            let color = Self.palette[number % Self.palette.count]
            out += "<rect x=\"\(legendX)\" y=\"32\" width=\"10\" height=\"10\" fill=\"\(color)\"/>"
            out += "<text x=\"\(legendX + 14)\" y=\"41\">\(Self.escaped(item.name))</text>\n"
            legendX += 24 + 6.5 * Double(item.name.count)
        }
        return out + "</svg>\n"
    }

    /// Writes ``svg()`` to `path`.
    ///
    /// - Throws: ``BenchError/cannotWrite(_:_:)`` naming the path and the reason.
    func write(to path: String) throws(BenchError) {
        do { try writeText(svg(), to: path) } catch {
            guard case .unwritable(_, let reason) = error else { throw .cannotWrite(path, error.description) }
            throw .cannotWrite(path, reason)
        }
    }

    /// The smallest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10ⁿ at or above `value`.
    static func niceCeiling(_ value: Double) -> Double {
        let magnitude = pow(10, floor(log10(value)))
        for factor in [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10] as [Double] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : value >= 10 ? String(format: "%.1f", value) : String(format: "%.2f", value)
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
