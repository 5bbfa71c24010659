import GGUF

/// The library's SHA-256, under the name the tests use.
package typealias SHA256Digest = GGUF.SHA256Digest
