#if TYPESET_MACROS
/// Makes a structure or an enumeration ``Generable``: a model can be asked for a value of it.
///
/// On a structure, every stored property becomes a property of the generated JSON object, in
/// declaration order; optional properties may be left out. Property types must be generable
/// (`String`, `Bool`, integers, `Double`, `Float`, `Decimal`, other `@Generable` types, and
/// arrays and optionals of them). `@Guide` describes a property and constrains its values.
///
/// On an enumeration without associated values, the value is one of the cases' names (or
/// their `String` raw values). On an enumeration with associated values, it is an object
/// tagged by `"type"` (the case's name) whose other properties are the associated values:
/// labelled ones by their labels, an unlabelled single value as `value`, several as `_0`, `_1`….
///
/// The macro adds the conformance to `Generable`: `generationSchema`, `init(_:)` from
/// ``GeneratedContent``, `generatedContent`, and for structures a `PartiallyGenerated` type
/// whose properties are all optional (what streaming snapshots hold). The memberwise
/// initializer stays.
///
/// - Parameter description: What the type is, for the model (written into the schema).
@attached(member, names: named(generationSchema), named(PartiallyGenerated), named(init(_:)), named(generatedContent))
@attached(extension, conformances: Generable, names: named(init(_:)), named(generatedContent))
public macro Generable(description: String? = nil) = #externalMacro(module: "TypesetMacroPlugin", type: "GenerableMacro")

/// Describes a stored property of a `@Generable` type for the model, and constrains it.
///
/// ```swift
/// @Guide(description: "Honest overall quality", .range(1...5))
/// var rating: Int
/// @Guide(description: "Exactly three key features", .count(3), .element(.pattern("^[A-Z]")))
/// var features: [String]
/// ```
///
/// See ``GenerationGuide`` for the guides and the types they apply to; `@Generable` reports a
/// guide that does not fit the property's type.
@attached(peer)
public macro Guide(description: String? = nil, _ guides: GenerationGuide<Any>...) =
    #externalMacro(module: "TypesetMacroPlugin", type: "GuideMacro")

/// Describes a `String` property of a `@Generable` type and constrains it to match a regex
/// literal, such as `/^[0-9]{3}-[0-9]{4}$/`; the pattern is read as an ECMAScript regular
/// expression (JSON Schema's dialect), which agrees with Swift's syntax on the common subset.
@attached(peer)
public macro Guide<Output>(description: String? = nil, _ pattern: Regex<Output>) =
    #externalMacro(module: "TypesetMacroPlugin", type: "GuideMacro")
#endif
