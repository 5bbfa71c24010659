import ArgumentParser
import Foundation
import GGUF
import Models
import Typeset
import TypesetServer
import TypesetTokenizer

@main
struct TypesetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "typeset",
        abstract: "A pure-Swift LLM inference engine with a grammar compiler.",
        discussion: """
        Models are GGUF files. Where a command takes a model, give a path or a known name \
        (smollm2, gemma3, qwen0.5b, qwen1.5b); without one, $TYPESET_MODEL or the default model (SmolLM2-135M-Instruct \
        Q4_1) in $TYPESET_CACHE/models is used. Fetch the models with Fixtures/fetch.sh.
        """,
        version: TypesetServer.version,
        subcommands: [Demo.self, Run.self, Serve.self, Inspect.self, Tokenize.self, Perplexity.self, GrammarCommand.self, Bench.self]
    )

    /// Runs the command line. Errors from Typeset (a missing model, a corrupt file) print as one
    /// line, `error: …`, and exit with status 1; usage errors and help keep ArgumentParser's format.
    static func main() async {
        // SIGQUIT (Ctrl-\) ends a command the way SIGINT (Ctrl-C) does, rather than being
        // taken for a crash by the runtime's backtracer; `serve` drains on either.
        signal(SIGQUIT) { _ in raise(SIGINT) }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as any UserFacingError {
            writeError("error: \(error)")
            exit(withError: ExitCode.failure)
        } catch let code as ExitCode {
            // A command that has said why it fails (`grammar trace` on a rejected instance).
            Foundation.exit(code.rawValue)
        } catch {
            // Help and --version exit cleanly through ArgumentParser; usage errors become one line.
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            writeError("error: \(message) (see 'typeset help')")
            exit(withError: code)
        }
    }
}

/// Errors reported to the user as one line, `error: <description>`.
protocol UserFacingError: Error, CustomStringConvertible {}

extension GGUFError: UserFacingError {}
extension ModelLocationError: UserFacingError {}
extension ModelConfigurationError: UserFacingError {}
extension VocabularyError: UserFacingError {}
extension TokenizerError: UserFacingError {}
extension ModelLoadError: UserFacingError {}
extension ModelError: UserFacingError {}
extension ConversationError: UserFacingError {}
extension DraftModelError: UserFacingError {}

func writeError(_ line: String) {
    var standardError = StandardError()
    print(line.replacingNewlines(), to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) { FileHandle.standardError.write(Data(string.utf8)) }
}

extension String {
    /// The string on one line (embedded newlines become spaces), for one-line error reports.
    func replacingNewlines() -> String {
        String(map { $0.isNewline ? " " : $0 })
    }
}
