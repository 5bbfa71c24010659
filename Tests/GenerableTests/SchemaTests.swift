import Foundation
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTestSupport

/// The seed schema `name` of Fixtures/schemas (written by hand, independently of the macro).
func seedSchema(_ name: String) throws -> JSONValue {
    try JSONValue(parsing: Fixtures.seedSchema(name))
}

/// A schema reduced to what constrains values: `$ref`s written in place, titles and (unless
/// kept) descriptions dropped, `{"enum": [strings]}` given its implied `"type": "string"`, and
/// keywords sorted, except the order of `properties`, which is the generation order.
func constraints(_ schema: JSONValue, keepingDescriptions: Bool = false) -> JSONValue {
    let definitions = (schema["$defs"] ?? schema["definitions"])?.members ?? []
    func reduce(_ value: JSONValue) -> JSONValue {
        guard case .object(let members) = value else { return value }
        if case .string(let reference)? = value["$ref"], let name = reference.split(separator: "/").last,
           let target = definitions.first(where: { $0.0 == String(name) })?.1
        {
            return reduce(target)
        }
        var reduced: [(String, JSONValue)] = []
        for (key, member) in members {
            switch key {
            case "$defs", "definitions", "title": continue
            case "description" where !keepingDescriptions: continue
            case "properties":
                reduced.append((key, .object((member.members ?? []).map { ($0.0, reduce($0.1)) })))
            case "items", "additionalProperties": reduced.append((key, reduce(member)))
            case "anyOf", "oneOf", "allOf", "prefixItems":
                if case .array(let items) = member { reduced.append((key, .array(items.map(reduce)))) }
            default: reduced.append((key, member))
            }
        }
        if case .array(let choices)? = value["enum"], value["type"] == nil,
           choices.allSatisfy({ if case .string = $0 { true } else { false } })
        {
            reduced.append(("type", .string("string")))
        }
        return .object(reduced.sorted { $0.0 < $1.0 })
    }
    return reduce(schema)
}

@Suite struct SchemaTests {
    // MARK: Against the seed schemas

    @Test func catProfileIsTheSeedSchemaExactly() throws {
        #expect(CatProfile.generationSchema.jsonSchema == (try seedSchema("cat_profile.json")))
    }

    @Test func brewSummaryIsTheSeedSchemaExactly() throws {
        #expect(BrewSummary.generationSchema.jsonSchema == (try seedSchema("brew_summary.json")))
    }

    @Test func productReviewIsTheSeedSchemaExactly() throws {
        #expect(ProductReview.generationSchema.jsonSchema == (try seedSchema("product_review.json")))
    }

    @Test func nestedSeedTypesConstrainLikeTheSeedSchemas() throws {
        #expect(constraints(StoryOutline.generationSchema.jsonSchema) == constraints(try seedSchema("story_outline.json")))
        #expect(constraints(DetailedJournalInsight.generationSchema.jsonSchema)
            == constraints(try seedSchema("detailed_journal_insight.json")))
    }

    @Test func optionalPropertiesMayBeLeftOutOrNull() throws {
        let schema = Event.generationSchema.jsonSchema
        #expect(schema["required"] == .array([.string("title"), .string("date")]))
        let shared = try seedSchema("event.json")
        // The seed schema requires the nullable properties; ours may also leave them out.
        for name in ["location", "attendeeCount"] {
            var ours = schema["properties"]?[name]
            #expect(ours == shared["properties"]?[name])
            ours = nil
        }
        #expect(schema["properties"]?["date"]?["pattern"] == .string("^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))
    }

    @Test func thePromptShowsTheSchemaWithoutTheTypeName() throws {
        let shown = try JSONValue(parsing: CatProfile.generationSchema.promptText)
        #expect(shown["title"] == nil)
        #expect(shown["description"] == .string("Basic profile information about a cat"))
        #expect(shown["properties"] == CatProfile.generationSchema.jsonSchema["properties"])
    }

    @Test func propertiesKeepDeclarationOrder() {
        let names = JournalAnalysis.generationSchema.jsonSchema["properties"]?.members?.map(\.0)
        #expect(names == ["mood", "topics", "summary", "nextPrompt", "lifeAreas"])
    }

    @Test func rawValuesNameTheCases() {
        #expect(Timeline.generationSchema.jsonSchema["enum"] == .array(["short-term", "medium-term", "long-term"].map(JSONValue.string)))
    }

    // MARK: Guides

    @Test func everyGuideReachesTheSchema() throws {
        let properties = try #require(GuideShowcase.generationSchema.jsonSchema["properties"])
        func keyword(_ property: String, _ keyword: String) -> JSONValue? { properties[property]?[keyword] }
        #expect(keyword("small", "minimum") == .number("-5") && keyword("small", "maximum") == .number("5"))
        #expect(keyword("unsigned", "minimum") == .number("10") && keyword("unsigned", "maximum") == .number("4294967295"))
        #expect(keyword("wide", "maximum") == .number("1000000000000") && keyword("wide", "minimum") == nil)
        #expect(keyword("ratio", "minimum") == .number("0.5") && keyword("ratio", "maximum") == .number("2.5"))
        #expect(keyword("float", "minimum") == .number("-1.5") && keyword("float", "maximum") == .number("1.5"))
        #expect(keyword("price", "minimum") == .number("0.01") && keyword("price", "maximum") == .number("99"))
        #expect(keyword("color", "enum") == .array([.string("red"), .string("green")]))
        #expect(keyword("version", "const") == .string("v1"))
        #expect(keyword("code", "pattern") == .string("^[A-Z]{3}$"))
        #expect(keyword("day", "pattern") == .string(#"^\d{4}-\d{2}-\d{2}$"#))
        #expect(keyword("day", "description") == .string("ISO date"))
        #expect(keyword("pair", "minItems") == .number("2") && keyword("pair", "maxItems") == .number("2"))
        #expect(keyword("pair", "items") == .object([("type", .string("integer")), ("minimum", .number("1")), ("maximum", .number("3"))]))
        #expect(keyword("tags", "items")?["enum"] == .array([.string("x"), .string("y")]))
        #expect(keyword("maybe", "type") == .array([.string("number"), .string("null")]))
        #expect(properties["computed"] == nil && properties["ignored"] == nil)
        #expect(GuideShowcase.generationSchema.jsonSchema["description"] == .string("Every guide on every type it applies to"))
    }

    @Test func everySchemaCompiles() throws {
        let schemas = [CatProfile.generationSchema, BrewSummary.generationSchema, RecipeDetails.generationSchema,
                       StoryOutline.generationSchema, Event.generationSchema, ProductReview.generationSchema,
                       JournalAnalysis.generationSchema, DetailedJournalInsight.generationSchema, GuideShowcase.generationSchema,
                       Shape.generationSchema, Folder.generationSchema, [Int].generationSchema, Int8?.generationSchema]
        for schema in schemas {
            _ = try Grammar(jsonSchema: schema.jsonSchema, options: .generation)
        }
    }

    // MARK: Enumerations with values and recursive types

    @Test func enumerationsWithValuesAreTaggedObjects() throws {
        let schema = Shape.generationSchema.jsonSchema
        let choices = try #require(schema["anyOf"]).arrayItems
        #expect(choices.count == 4)
        #expect(choices[0]["properties"]?["type"] == .object([("const", .string("circle"))]))
        #expect(choices[0]["required"] == .array([.string("type"), .string("radius")]))
        #expect(choices[2]["properties"]?["value"]?["type"] == .string("string"))
        #expect(choices[3]["required"] == .array([.string("type")]))
        for shape: Shape in [.circle(radius: 1.5), .rectangle(width: 2, height: 3), .label("hi"), .point] {
            #expect(try Shape(GeneratedContent(json: shape.generatedContent.jsonString)) == shape)
            #expect(JSONSchemaValidatorCheck.problems(schema, shape.generatedContent.jsonString) == [])
        }
    }

    @Test func recursiveTypesUseDefinitions() throws {
        let schema = Folder.generationSchema.jsonSchema
        #expect(schema["properties"]?["children"]?["items"] == .object([("$ref", .string("#/$defs/Folder"))]))
        #expect(schema["$defs"]?["Folder"]?["properties"]?["name"] != nil)
        let tree = Folder(name: "root", children: [Folder(name: "a", children: [Folder(name: "b", children: [])])])
        #expect(try Folder(GeneratedContent(json: tree.generatedContent.jsonString)) == tree)
        #expect(JSONSchemaValidatorCheck.problems(schema, tree.generatedContent.jsonString) == [])
        _ = try Grammar(jsonSchema: schema, options: .generation)
    }

    // MARK: Nested types

    /// A type nested in another names its siblings as its declaration does: `Unit` inside
    /// `GetWeather` is `GetWeather.Unit`, not the file-scope `Unit` (which the expansion once
    /// used, silently giving the wrong schema).
    @Test func nestedTypesResolveInTheirOwnScope() throws {
        let schema = GetWeather.Arguments.generationSchema.jsonSchema
        let units: JSONValue = .array([.string("celsius"), .string("fahrenheit")])
        #expect(schema["properties"]?["unit"]?["enum"] == units)
        #expect(schema["properties"]?["fallback"]?["anyOf"]?.arrayItems.first?["enum"] == units)
        #expect(schema["properties"]?["location"]?["properties"]?["city"]?["type"] == .string("string"))
        #expect(schema["properties"]?["ticket"]?["pattern"] == .string("^(?:[A-Z]{2}[0-9]{6})$"))
        #expect(Unit.generationSchema.jsonSchema["enum"] == .array([.string("kelvin")]))
        let arguments = try GetWeather.Arguments(GeneratedContent(
            json: #"{"location":{"city":"Lyon"},"unit":"fahrenheit","ticket":"AB123456"}"#))
        #expect(arguments.unit == .fahrenheit && arguments.fallback == nil && arguments.location.city == "Lyon")
        #expect(JSONSchemaValidatorCheck.problems(schema, arguments.generatedContent.jsonString) == [])
        #expect(JSONSchemaValidatorCheck.problems(schema, #"{"location":{"city":"Lyon"},"unit":"kelvin","ticket":"AB123456"}"#) != [])

        let reading = GetWeather.Reading.generationSchema.jsonSchema
        #expect(reading["anyOf"]?.arrayItems.first?["properties"]?["unit"]?["enum"] == units)
        for value: GetWeather.Reading in [.temperature(21.5, unit: .celsius), .missing(reason: nil), .missing(reason: .init(city: "Oslo"))] {
            #expect(try GetWeather.Reading(GeneratedContent(json: value.generatedContent.jsonString)) == value)
        }
    }

    // MARK: Values

    @Test func valuesRoundTripThroughContent() throws {
        let value = GuideShowcase(
            small: -5, unsigned: 4_000_000_000, wide: -9_007_199_254_740_993, ratio: 0.5, float: 1.25,
            price: Decimal(string: "12.34")!, color: "red", version: "v1", code: "ABC", day: "2025-01-02",
            pair: [1, 3], tags: ["x"], flag: true, maybe: nil)
        let json = value.generatedContent.jsonString
        #expect(json.contains("-9007199254740993"))   // exact beyond 2^53
        #expect(!json.contains("maybe"))
        #expect(try GuideShowcase(GeneratedContent(json: json)) == value)
        #expect(JSONSchemaValidatorCheck.problems(GuideShowcase.generationSchema.jsonSchema, json) == [])
        let brew = BrewSummary(flavor: "Bright.", advice: "Grind finer.", rating: 4, note: .fruity)
        #expect(brew.generatedContent.jsonString == #"{"flavor":"Bright.","advice":"Grind finer.","rating":4,"note":"fruity"}"#)
        #expect(try BrewSummary(GeneratedContent(json: brew.generatedContent.jsonString)) == brew)
    }

    @Test func decodingErrorsSayWhere() throws {
        func error(_ json: String) -> GeneratedContentError? {
            do { _ = try StoryOutline(GeneratedContent(json: json)); return nil } catch { return error as? GeneratedContentError }
        }
        let setting = #""setting":{"timePeriod":"now","location":"here"}"#
        #expect(error(#"{"title":"T","protagonist":{"name":"A"},\#(setting),"plotPoints":[]}"#)
            == .missingProperty("motivation", pointer: "/protagonist"))
        #expect(error(#"{"title":"T","protagonist":{"name":"A","motivation":"m"},\#(setting),"plotPoints":[{"description":"d","position":"later"}]}"#)
            == .unknownCase("later", type: "StoryPosition", pointer: "/plotPoints/0/position"))
        #expect(error(#"{"title":7}"#) == .typeMismatch(expected: "string", found: "number", pointer: "/title"))
        #expect(error("[1]") == .typeMismatch(expected: "structure", found: "array", pointer: ""))
        #expect(throws: GeneratedContentError.numberOutOfRange("300", type: "Int8", pointer: "")) { try Int8(GeneratedContent(json: "300")) }
        #expect(throws: GeneratedContentError.self) { try GeneratedContent(json: "{\"a\":") }
    }

    @Test func contentReadsPropertiesAndKinds() throws {
        let content = try GeneratedContent(json: #"{"dailySoup":"Tomato","price":4.5,"sides":["bread"],"note":null}"#)
        #expect(try content.value(String.self, forProperty: "dailySoup") == "Tomato")
        #expect(try content.value(Double.self, forProperty: "price") == 4.5)
        #expect(try content.value([String].self, forProperty: "sides") == ["bread"])
        #expect(try content.value(String?.self, forProperty: "note") == nil)
        #expect(try content.value(String?.self, forProperty: "absent") == nil)
        #expect(throws: GeneratedContentError.missingProperty("absent", pointer: "")) { try content.value(String.self, forProperty: "absent") }
        guard case .structure(let properties, let keys) = content.kind else { Issue.record("not a structure"); return }
        #expect(keys == ["dailySoup", "price", "sides", "note"] && properties["price"] == GeneratedContent(kind: .number(4.5)))
    }

    // MARK: Dynamic schemas

    @Test func dynamicSchemasBuildAndValidate() throws {
        let soup = DynamicGenerationSchema(name: "Soup", anyOf: ["Tomato", "Chicken Noodle", "Clam Chowder"])
        let menu = DynamicGenerationSchema(name: "Menu", description: "Today's menu", properties: [
            .init(name: "dailySoup", schema: DynamicGenerationSchema(referenceTo: "Soup")),
            .init(name: "sides", schema: DynamicGenerationSchema(arrayOf: .init(type: String.self), minimumElements: 1, maximumElements: 3)),
            .init(name: "price", description: "In euros", schema: .init(type: Double.self, guides: [.range(1...30)])),
            .init(name: "special", schema: .init(type: CatProfile.self), isOptional: true),
        ])
        let schema = try GenerationSchema(root: menu, dependencies: [soup])
        let json = schema.jsonSchema
        #expect(json["title"] == .string("Menu"))
        #expect(json["$defs"]?["Soup"]?["enum"] == .array(["Tomato", "Chicken Noodle", "Clam Chowder"].map(JSONValue.string)))
        #expect(json["properties"]?["sides"]?["maxItems"] == .number("3"))
        #expect(json["properties"]?["special"]?["type"] == .array([.string("object"), .string("null")]))
        #expect(json["required"] == .array([.string("dailySoup"), .string("sides"), .string("price")]))
        _ = try Grammar(jsonSchema: json, options: .generation)
        let instance = #"{"dailySoup":"Tomato","sides":["bread"],"price":4.5}"#
        #expect(JSONSchemaValidatorCheck.problems(json, instance) == [])
        #expect(!JSONSchemaValidatorCheck.problems(json, #"{"dailySoup":"Miso","sides":["bread"],"price":4.5}"#).isEmpty)
    }

    @Test func dynamicSchemaErrors() {
        let a = DynamicGenerationSchema(name: "A", properties: [.init(name: "b", schema: .init(referenceTo: "B"))])
        #expect(throws: GenerationSchemaError.undefinedReferences(schema: "A", references: ["B"])) {
            try GenerationSchema(root: a, dependencies: [])
        }
        #expect(throws: GenerationSchemaError.duplicateType("A")) {
            try GenerationSchema(root: a, dependencies: [DynamicGenerationSchema(name: "A", anyOf: ["x"]), DynamicGenerationSchema(name: "B", anyOf: ["y"])])
        }
        let twice = DynamicGenerationSchema(name: "T", properties: [
            .init(name: "x", schema: .init(type: Int.self)), .init(name: "x", schema: .init(type: String.self)),
        ])
        #expect(throws: GenerationSchemaError.duplicateProperty(schema: "T", property: "x")) { try GenerationSchema(root: twice, dependencies: []) }
        #expect(throws: GenerationSchemaError.emptyTypeChoices(schema: "E")) {
            try GenerationSchema(root: DynamicGenerationSchema(name: "E", anyOf: [String]()), dependencies: [])
        }
        #expect(throws: GenerationSchemaError.invalidElementCount(schema: nil, minimum: 3, maximum: 1)) {
            try GenerationSchema(root: DynamicGenerationSchema(arrayOf: .init(type: Int.self), minimumElements: 3, maximumElements: 1), dependencies: [])
        }
        // A dependency's own references are checked too.
        let loop = DynamicGenerationSchema(name: "Node", properties: [.init(name: "next", schema: .init(referenceTo: "Node"), isOptional: true)])
        #expect(throws: Never.self) { try GenerationSchema(root: .init(referenceTo: "Node"), dependencies: [loop]) }
    }
}

/// The independent validator (TypesetTestSupport's, built on Foundation's JSON) over schema values.
enum JSONSchemaValidatorCheck {
    static func problems(_ schema: JSONValue, _ instance: String) -> [String] {
        guard let validator = try? JSONSchemaValidator(schemaText: schema.compactText) else { return ["the schema does not load"] }
        return validator.problems(in: instance)
    }
}

extension JSONValue {
    var arrayItems: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }
}
