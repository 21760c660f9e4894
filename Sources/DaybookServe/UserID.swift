import DaybookCore
import DaybookSupport

/// The user id rule of the event format, asked of the decoder itself: a user id read from
/// a URL is valid exactly when an event with it as `user` would be (non-empty, NFC), so a
/// rule the decoder gains applies here too.
enum UserID {
    /// Why `user` is not a user id of the event format; nil when it is one.
    static func problem(_ user: String) -> String? {
        // A deletion needs nothing but the user and a uuid: its only other rule is the uuid's.
        let probe = JSONValue.object(["type": .string("sample-deleted"), "user": .string(user), "uuid": .string("u")])
        do {
            _ = try EventDecoder().decode(probe, exactIntegers: [:])
            return nil
        } catch {
            // The decoder's own words quote the id whole; a URL's may be long, so these do not.
            guard error.field == "user" else { return "is not accepted by the event format (code \(error.code.rawValue))" }
            switch error.code {
            case .emptyString: return "must not be empty"
            case .notNormalized: return "is not in Unicode normalization form C (NFC); ids are compared byte for byte: send the NFC form, percent-encoded as UTF-8"
            default: return "is not a user id of the event format (code \(error.code.rawValue))"
            }
        }
    }
}
