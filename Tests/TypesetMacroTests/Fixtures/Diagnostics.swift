import Typeset

// Each `// error:` comment is an error the line must produce, and no line produces another.

@Generable // error: @Generable applies to structures, actors and enumerations
class Cat {}

@Generable
actor Counter { // error: actor 'Counter' has no initializers
    var count: Int // error: 'count' is a 'var' of an actor: make it a 'let', which the value can be read from without the actor's isolation
}

@Generable
struct Unsupported {
    var scores: [String: Int] // error: 'scores' cannot be generated: dictionaries are not generable; use an array of a @Generable structure
    var pair: (Int, Int) // error: 'pair' cannot be generated: tuples and functions are not generable; use a @Generable structure
    var forced: Int! // error: 'forced' cannot be generated: implicitly unwrapped optionals are not generable; use '?'
    var unique: Set<String> // error: 'unique' cannot be generated: sets are not generable; use an array
    var name = "x" // error: 'name' needs a type annotation: @Generable reads each property's type
    let version: Int = 1 // error: 'version' is a constant with an initial value, so it cannot be generated; make it a 'var' or leave it out of the type
    var anything: any Sendable // error: 'anything' cannot be generated: existential and opaque types are not generable; use a concrete @Generable type
    var maybe: Int?? // error: 'maybe' cannot be generated: nested optionals are not generable
}

@Generable
struct MisplacedGuides {
    @Guide(.range(1...5)) var name: String // error: '.range' does not apply to strings; 'name' is String
    @Guide(.count(3)) var number: Int // error: '.count' does not apply to numbers; 'number' is Int
    @Guide(.element(.anyOf(["a"]))) var numbers: [Int] // error: in '.element': '.anyOf' does not apply to numbers; 'numbers' is [Int]
    @Guide(/[0-9]+/) var code: Int // error: a regex guide applies to String properties; 'code' is Int
    @Guide(.range(1...5)) var flag: Bool // error: guides do not apply to Bool; 'flag' is Bool
    @Guide(.between(1, 5)) var score: Int // error: '.between' is not a guide; the guides are .range, .minimum, .maximum, .anyOf, .constant, .pattern, .count, .minimumCount, .maximumCount and .element // error: type 'GenerationGuide<Any>' has no member 'between'
    @Guide(.anyOf(["a"])) var nested: Inner // error: guides apply to strings, numbers and arrays; describe a nested @Generable type's constraints on its own properties; 'nested' is Inner
}

@Generable
struct Inner {
    var value: Int
}

@Generable
enum Empty {} // error: a @Generable enumeration needs at least one case

@Generable
enum Tagged {
    case a(type: String) // error: case 'a' has a value labelled 'type', which names the case in the generated object; rename it
}
