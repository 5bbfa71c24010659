import Foundation
import HTTPTypes

/// Which web pages' scripts may call the server (Cross-Origin Resource Sharing), as
/// llama-server decides it, so that a browser app written for it works unchanged.
///
/// Every response names the origins allowed in `Access-Control-Allow-Origin`; a browser's
/// preflight (`OPTIONS` on any path, answered before the API key is checked, since browsers
/// send it without credentials) also gets the methods, headers and credentials allowed:
///
///     origins      a request from Origin O gets        preflight also gets
///     ─────────    ────────────────────────────        ────────────────────────────────
///     .any         O itself with credentials, else *   Allow-Credentials, -Methods, -Headers
///     .localhost   O when O is a loopback origin
///     .listed(L)   O when O is in L
///
/// The server listens on loopback by default, and an API key still guards every route but
/// the health check; `.localhost` keeps other sites' pages from calling a server a browser can
/// reach.
public struct CORSPolicy: Sendable, Equatable {
    /// The origins allowed.
    public enum Origins: Sendable, Equatable {
        /// Any origin (llama-server's default, `--cors-origins '*'`).
        case any
        /// Only loopback origins: `http://localhost`, `http://127.0.0.1`, `http://[::1]`, with any
        /// port and scheme (`--cors-origins localhost`).
        case localhost
        /// These origins exactly (`--cors-origins https://a.example,https://b.example`).
        case listed([String])
    }

    public var origins: Origins
    /// The methods a preflight allows (`Access-Control-Allow-Methods`).
    public var methods: String
    /// The request headers a preflight allows (`Access-Control-Allow-Headers`).
    public var headers: String
    /// Whether a page may send credentials (cookies, HTTP authentication); with `.any`, the
    /// request's own origin is then named rather than `*`, which browsers refuse with
    /// credentials.
    public var allowsCredentials: Bool

    public init(origins: Origins = .any, methods: String = "GET, POST, DELETE, OPTIONS", headers: String = "*", allowsCredentials: Bool = true) {
        self.origins = origins
        self.methods = methods
        self.headers = headers
        self.allowsCredentials = allowsCredentials
    }

    /// The policy `--cors-origins` spells: `*`, `localhost`, or origins separated by commas.
    ///
    /// - Returns: `nil` when the list names no origin.
    public static func origins(parsing text: String) -> Origins? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "*" { return .any }
        if trimmed == "localhost" { return .localhost }
        let listed = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return listed.isEmpty ? nil : .listed(listed)
    }

    /// The value of `Access-Control-Allow-Origin` for a request from `origin`, or `nil` when
    /// the origin is not allowed (the header is then left out, and the browser withholds the
    /// response from the page).
    func allowedOrigin(for origin: String?) -> String? {
        switch origins {
        case .any:
            guard allowsCredentials else { return "*" }
            return origin ?? "*"
        case .localhost:
            guard let origin, Self.isLoopback(origin) else { return nil }
            return origin
        case .listed(let listed):
            guard let origin, listed.contains(origin) else { return nil }
            return origin
        }
    }

    func addOriginHeader(to fields: inout HTTPFields, origin: String?) {
        if let allowed = allowedOrigin(for: origin) {
            fields[.accessControlAllowOrigin] = allowed
            if allowed != "*" { fields[.vary] = "Origin" }
        }
    }

    func addPreflightHeaders(to fields: inout HTTPFields) {
        fields[.accessControlAllowCredentials] = allowsCredentials ? "true" : "false"
        fields[.accessControlAllowMethods] = methods
        fields[.accessControlAllowHeaders] = headers
        fields[.accessControlMaxAge] = "600"
    }

    /// Whether `origin` (`scheme://host[:port]`) names this machine's loopback interface.
    static func isLoopback(_ origin: String) -> Bool {
        guard let schemeEnd = origin.range(of: "://") else { return false }
        var authority = origin[schemeEnd.upperBound...]
        guard !authority.contains("/"), !authority.contains("@") else { return false }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.index(after: authority.startIndex) ..< close]
            authority = authority[authority.index(after: close)...]
            guard authority.isEmpty || authority.hasPrefix(":") else { return false }
            authority = authority.dropFirst()
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            authority = parts.count > 1 ? parts[1] : ""
        }
        guard authority.isEmpty || (authority.count <= 5 && authority.allSatisfy(\.isASCIIDigit)) else { return false }
        return host == "localhost" || host == "::1" || host == "127.0.0.1"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0" ... "9").contains(self) }
}
