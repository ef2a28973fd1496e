import Foundation

/// The shell-safe base64 that tokens and cursors print as: base64url with `.`
/// in place of `-`, so a token never starts with `-` and never reads as an
/// option when a script passes it as an argument.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: ".").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Reads the printed form, and plain base64url as earlier versions printed it.
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: ".", with: "+").replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { [UInt8]($0) }
    }
}
