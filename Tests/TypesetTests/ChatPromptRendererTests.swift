import ChatTemplating
import Foundation
import Testing
@testable import Typeset

/// What the prompt renderer gives templates beside the messages.
@Suite struct ChatPromptRendererTests {
    /// Today's date in the two spellings templates print (Llama 3's "Today Date: 07 Mar 2026"),
    /// in the local time zone, as llama.cpp and Python's strftime write them.
    @Test func todaysDateAsTemplatesReadIt() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        for (components, dateString, datetime) in [
            (DateComponents(year: 2026, month: 3, day: 7, hour: 12), "07 Mar 2026", "Mar 07 2026"),
            (DateComponents(year: 2027, month: 12, day: 31, hour: 23, minute: 59), "31 Dec 2027", "Dec 31 2027"),
        ] {
            let variables = ChatPromptRenderer.today(try #require(calendar.date(from: components)))
            #expect(variables["date_string"] == .string(dateString))
            #expect(variables["datetime"] == .string(datetime))
        }
    }
}
