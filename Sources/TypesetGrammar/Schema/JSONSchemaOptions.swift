/// How a JSON Schema becomes a grammar.
public struct JSONSchemaOptions: Sendable, Hashable {
    /// Whitespace the output may contain between tokens of JSON.
    public enum Whitespace: Sendable, Hashable {
        /// None at all: `{"a":1,"b":[true]}`. What models are prompted with, and the fastest.
        case compact
        /// Spaces, tabs and newlines between structural characters, at most `maximum` bytes
        /// in a row, so a model cannot loop on whitespace.
        case flexible(maximum: Int)
    }

    /// The order in which an object's declared properties may be written.
    public enum PropertyOrder: Sendable, Hashable {
        /// The order the schema declares them in (properties merged from `allOf` parts and
        /// `anyOf` alternatives in document order), then other members. One way to write each
        /// object: what a model should be held to.
        case declaration
        /// Any order, members of `patternProperties` and `additionalProperties` among them:
        /// what a validator accepts, for checking values written elsewhere (exactly, for the
        /// text of any parsed value). An optional property may appear more than once, and
        /// so may a required one in an object with more than
        /// ``requiredPropertiesInAnyOrderLimit`` of them, where the required names are
        /// counted rather than remembered: texts with a repeated name, which no parsed value
        /// has and RFC 8259 leaves undefined, are not told apart.
        case any
    }

    /// What a `format` the compiler does not enforce (a vendor's own: `path`, `semver`…) does.
    public enum UnknownFormats: Sendable, Hashable {
        /// The schema is refused, naming the format: no string is let through unchecked.
        case refuse
        /// It asserts nothing, as JSON Schema 2020-12 treats every format by default (an
        /// annotation); each one is listed in `Grammar.droppedKeywords`.
        case annotate
    }

    /// The most required properties an object remembers by name in ``PropertyOrder/any``
    /// order (a state for each subset of those written); past it, they are counted.
    public static let requiredPropertiesInAnyOrderLimit = 12

    public var whitespace: Whitespace = .compact
    /// The order of an object's declared properties (``PropertyOrder/declaration`` by default).
    public var propertyOrder: PropertyOrder = .declaration
    /// What an unknown `format` does (``UnknownFormats/refuse`` by default).
    public var unknownFormats: UnknownFormats = .refuse
    /// Drop keywords the compiler cannot enforce instead of failing, and list them in
    /// `Grammar.droppedKeywords`. The grammar then accepts a superset of the schema.
    public var lenient = false
    /// Repetition bounds (`maxItems`, `{n,m}`, `minLength` of property names…) above this are
    /// a budget error. A string value's `minLength` and `maxLength` are not repetitions: the
    /// matcher counts characters, so they may be as large as a schema says.
    public var repetitionLimit = 2000
    /// How many `$ref`s deep `allOf` merging may inline before giving up.
    public var referenceDepthLimit = 32
    /// Objects that declare `properties` or `patternProperties` but say nothing about
    /// `additionalProperties` admit no other property, as if it were `false` (XGrammar's
    /// "strict mode"). The schema then describes what the model should write rather than
    /// everything a validator would let pass; small models otherwise invent keys. Objects
    /// that declare nothing (`{"type":"object"}`) stay open.
    public var closesDeclaredObjects = false
    /// Integers without a `minimum` or `maximum` stay within ±(2⁵³−1), the range every JSON
    /// parser reads exactly (I-JSON, RFC 7493 §2.2), instead of having unbounded digits.
    public var boundsIntegersToInteroperableRange = false
    /// Numbers are written without an exponent, with at most 16 digits before the point (more
    /// when a bound needs them) and 16 after: about what a `Double` holds, where a small model
    /// may otherwise write digits until the context is full.
    public var boundsNumberDigits = false
    /// How the output is written: as JSON, or as a list of Python function calls.
    package var syntax: Syntax = .json

    /// How the output is written.
    package enum Syntax: Sendable, Hashable {
        /// JSON text.
        case json
        /// Function calls as Liquid's LFM models write them, a Python list of calls with
        /// keyword arguments: `[get_weather(city="Paris", days=3)]`. The schema must describe
        /// one call (`{"name": {"const": …}, "arguments": {…}}`, every call schema a `Conversation`
        /// builds) or be an `anyOf` of such; values are Python literals, which are JSON's but
        /// `True`, `False` and `None`. `several`: whether the list may hold more than one call.
        case pythonCalls(several: Bool)
    }

    public init(whitespace: Whitespace = .compact, lenient: Bool = false, propertyOrder: PropertyOrder = .declaration) {
        self.whitespace = whitespace
        self.lenient = lenient
        self.propertyOrder = propertyOrder
    }

    /// The options for checking values written elsewhere, as a JSON Schema 2020-12 validator
    /// does: properties in any order (``PropertyOrder/any``) and unknown formats as
    /// annotations (``UnknownFormats/annotate``).
    public static var validation: JSONSchemaOptions {
        var options = JSONSchemaOptions(propertyOrder: .any)
        options.unknownFormats = .annotate
        return options
    }

    /// The options for generating values rather than checking them: compact whitespace,
    /// ``closesDeclaredObjects``, ``boundsIntegersToInteroperableRange`` and
    /// ``boundsNumberDigits``. What
    /// `Conversation` uses for a `jsonSchema` constraint.
    public static var generation: JSONSchemaOptions {
        var options = JSONSchemaOptions()
        options.closesDeclaredObjects = true
        options.boundsIntegersToInteroperableRange = true
        options.boundsNumberDigits = true
        return options
    }
}

/// A keyword the grammar does not enforce: dropped by the lenient option, or an unknown
/// `format` kept as an annotation (``JSONSchemaOptions/UnknownFormats/annotate``).
public struct DroppedKeyword: Sendable, Equatable, CustomStringConvertible {
    public var keyword: String
    /// JSON pointer of the schema object holding the keyword.
    public var pointer: String
    public var reason: String

    public var description: String { "\(pointer)/\(keyword): \(reason)" }
}
