import Typeset

@Generable(description: "Basic profile information about a cat")
public struct CatProfile {
    var name: String
    @Guide(description: "The age of the cat", .range(0...20))
    var age: Int
    @Guide(description: "A code", /^[A-Z]{3}$/)
    var code: String?
    @Guide(.count(2...5), .element(.anyOf(["a", "b"])))
    var tags: [String]
    /// `import Typeset` alone makes Foundation's `Decimal` visible.
    var price: Decimal?
    var computed: Int { age * 2 }
    static let shared = 1
}

@Generable
enum Timeline: String {
    case shortTerm = "short-term"
    case longTerm
}

@Generable(description: "A shape")
enum Shape {
    case circle(radius: Double)
    case pair(Int, Int)
    case label(String?)
    case point
}

struct GetWeather {
    @Generable
    enum Unit {
        case celsius
        case fahrenheit
    }

    @Generable
    struct Arguments {
        @Guide(description: "The city, as its residents spell it")
        var city: String
        var unit: Unit?
        @Guide(description: "A ticket code", .pattern(/[A-Z]{2}[0-9]{6}/))
        var ticket: String
    }
}

@Generable(description: "A journal entry, kept by an actor")
actor JournalEntry {
    @Guide(description: "A one-line title")
    let title: String
    let mood: Int?
}
