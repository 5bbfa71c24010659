// The Swift samples of seed 002 (the nutrition samples), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".
import TypesetFoundationModels

// context: the session 002_18 uses
let nutritionSession = LanguageModelSession()
/// context: the type 002_18 returns (the seed leaves it out).
typealias ParsedFood = NutritionParseResult

// 002_18 (the seed indents its first prompt line one space less than the closing quotes,
// which Swift rejects: indented here; and its page lost the interpolation's backslash,
// printing "(description)": restored)
func parseFood(_ description: String) async throws -> ParsedFood {
    let prompt = """
        Parse this food description into nutritional data: "\(description)"
        
        Examples of good parsing:
        "I had 2 scrambled eggs with toast" → Consider: 2 large eggs (~140 cal), 1 slice toast (~80 cal), cooking butter (~30 cal)
        "protein shake after workout" → Consider: 1 scoop protein powder (~120 cal) + milk/water
        "pizza slice for lunch" → Consider: 1 slice medium pizza (~280 cal)
        "handful of almonds" → Consider: ~20 almonds (~160 cal)
        
        Be realistic about portions people actually eat.
        Account for cooking methods and common additions.
        """
    
    let response = try await nutritionSession.respond(
        to: prompt,
        generating: NutritionParseResult.self
    )

    return response.content
}

// 002_19
@available(iOS 26.0, *)
@Generable
public struct NutritionLabelParsing: Codable {
    @Guide(description: "Name of the food product, or 'Nutrition Label' if no specific name found")
    let foodName: String    

    @Guide(description: "Serving size with unit, e.g. '1 cup', '30g', '1 slice'")
    let servingSize: String

    @Guide(description: "Calories per serving as a precise number (can include decimals)")
    let calories: Double

    @Guide(description: "Protein in grams per serving with full decimal precision (e.g., 7.8, 24.5, 12.3)")
    let proteinGrams: Double

    @Guide(description: "Total carbohydrates in grams per serving with full decimal precision (e.g., 45.2, 12.7)")
    let carbsGrams: Double

    @Guide(description: "Total fat in grams per serving with full decimal precision (e.g., 8.5, 15.3)")
    let fatGrams: Double

    @Guide(description: "Fiber in grams per serving with full decimal precision if available, otherwise 0")
    let fiberGrams: Double

    @Guide(description: "Total sugars in grams per serving with full decimal precision if available, otherwise 0")
    let sugarGrams: Double

    @Guide(description: "Sodium in milligrams per serving with full decimal precision if available, otherwise 0")
    let sodiumMg: Double
}

// context: the type around 002_20
enum NutritionPrompts {
    public static let nutrition = """
    You are a nutrition expert specializing in parsing nutrition labels and food data.

    CRITICAL PARSING RULES:

    STEP 1: IDENTIFY THE SERVING SIZE
    - Look for "Serving size:", "Per serving:", or similar indicators
    - This is your target serving size (e.g., "16.7g")

    STEP 2: IDENTIFY ALL PER-100G VALUES
    - Find ALL nutritional values in the per-100g column (ignore % RDA columns)
    - Common nutrients: Energy/Calories, Protein, Carbohydrate, Total Fat, Saturated Fat, Total Sugars, Added Sugars, Fiber, Sodium, Cholesterol

    STEP 3: CALCULATE EVERY VALUE USING SAME FORMULA
    - For EVERY single nutrient, use: serving_value = (per_100g_value × serving_size) ÷ 100
    - Do NOT use any value directly - ALWAYS calculate

    MANDATORY CALCULATIONS (example for 16.7g serving):
    - Calories: (per_100g_calories × 16.7) ÷ 100
    - Protein: (per_100g_protein × 16.7) ÷ 100  
    - Carbs: (per_100g_carbs × 16.7) ÷ 100
    - Fat: (per_100g_fat × 16.7) ÷ 100
    - Sugar: (per_100g_sugar × 16.7) ÷ 100
    - Fiber: (per_100g_fiber × 16.7) ÷ 100
    - Sodium: (per_100g_sodium × 16.7) ÷ 100

    VERIFICATION CHECK:
    - If serving is 16.7g, ALL values should be roughly 1/6th of the per-100g values
    - If any value seems too high (like 38g sugar for 16.7g serving), you made an error

    PRECISION:
    - Round calories to nearest 0.1 kcal
    - Round macros to nearest 0.1g
    - Round sodium to nearest 1mg

    OUTPUT FORMAT:
    - Food name: Extract product name or use "Nutrition Label" if unclear
    - Serving size: Use the actual serving size from the label (e.g., "16.7g")
    - All nutrients: Use ONLY the calculated per-serving values (never use raw per-100g values)
    """
}
