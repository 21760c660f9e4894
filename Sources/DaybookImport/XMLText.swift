/// Why an attribute value could not be read as text.
public struct XMLTextProblem: Error, Equatable, Sendable {
    public var message: String
}

/// XML attribute values as text: the five predefined entities, character references
/// (`&#8217;`, `&#x2019;`), and attribute-value normalization (a literal tab or line
/// break is a space; `\r\n` is one). The bytes must be UTF-8.
enum XMLText {
    static func attributeValue(_ raw: UnsafeBufferPointer<UInt8>) -> Result<String, XMLTextProblem> {
        var plain = true
        for c in raw where c == 38 || c == 9 || c == 10 || c == 13 || c == 60 {
            plain = false
            break
        }
        if plain {
            guard let s = String(validating: raw, as: UTF8.self) else { return .failure(notUTF8(raw)) }
            return .success(s)
        }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            let c = raw[i]
            switch c {
            case 13:
                out.append(32)
                if i + 1 < raw.count, raw[i + 1] == 10 { i += 1 }
            case 9, 10:
                out.append(32)
            case 60:
                return .failure(XMLTextProblem(message: "a raw '<' in an attribute value (not well-formed XML)"))
            case 38:
                guard let semicolon = raw[(i + 1)...].prefix(12).firstIndex(of: 59) else {
                    return .failure(XMLTextProblem(message: "an '&' that starts no entity reference (write &amp;)"))
                }
                let name = String(decoding: UnsafeBufferPointer(rebasing: raw[(i + 1)..<semicolon]), as: UTF8.self)
                switch name {
                case "amp": out.append(38)
                case "lt": out.append(60)
                case "gt": out.append(62)
                case "quot": out.append(34)
                case "apos": out.append(39)
                default:
                    guard let scalar = characterReference(name) else {
                        return .failure(XMLTextProblem(message: "unknown entity &\(String(name.unicodeScalars.filter(\.isASCII).prefix(12).map(Character.init)));"))
                    }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                }
                i = semicolon
            default:
                out.append(c)
            }
            i += 1
        }
        guard let s = out.withUnsafeBufferPointer({ String(validating: $0, as: UTF8.self) }) else { return .failure(notUTF8(raw)) }
        return .success(s)
    }

    /// `#65` or `#x41` as a scalar XML allows (no NUL, no surrogates, no U+FFFE/FFFF).
    static func characterReference(_ name: String) -> Unicode.Scalar? {
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        let value: UInt32?
        if digits.hasPrefix("x") { value = UInt32(digits.dropFirst(), radix: 16) } else { value = UInt32(digits, radix: 10) }
        guard let value, value != 0, value != 0xFFFE, value != 0xFFFF, let scalar = Unicode.Scalar(value) else { return nil }
        return scalar
    }

    private static func notUTF8(_ raw: UnsafeBufferPointer<UInt8>) -> XMLTextProblem {
        var offset = 0
        var it = raw.makeIterator()
        var decoder = UTF8()
        loop: while true {
            let before = offset
            switch decoder.decode(&it) {
            case .scalarValue(let s): offset += UTF8.width(s)
            case .emptyInput: break loop
            case .error: return XMLTextProblem(message: "an attribute value is not UTF-8 (byte 0x\(String(raw[before], radix: 16, uppercase: true)))")
            }
        }
        return XMLTextProblem(message: "an attribute value is not UTF-8")
    }
}
