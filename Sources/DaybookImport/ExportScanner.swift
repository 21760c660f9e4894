/// One `<Record …>` of an Apple Health `export.xml`, with the metadata Daybook reads.
///
/// Attribute values are decoded (entities, character references, attribute-value
/// normalization); an attribute that is absent is nil. Other metadata keys and the
/// record's other children (heart-rate-variability lists) are not kept.
public struct ExportRecord: Equatable, Sendable {
    /// The line of `export.xml` the record starts on (1-based), for messages.
    public var line: Int
    public var type: String?
    public var sourceName: String?
    public var sourceVersion: String?
    public var device: String?
    public var unit: String?
    public var creationDate: String?
    public var startDate: String?
    public var endDate: String?
    public var value: String?
    /// `HKTimeZone` metadata: the IANA zone the sample was recorded in, when the writer said.
    public var timeZone: String?
    public var externalUUID: String?
    public var syncIdentifier: String?
    /// `HKMetadataKeySyncVersion`: the writer's version of the record with that identifier.
    public var syncVersion: String?
    /// `HKWasUserEntered` metadata ("1" for a value typed in by hand).
    public var wasUserEntered: String?
    /// Why the record's text could not be read (an unknown entity, bytes that are not
    /// UTF-8); the record is then rejected, never guessed at.
    public var problem: String?

    public init(line: Int) { self.line = line }
}

/// Why `export.xml` could not be read on: the file is not XML, is cut short, or is not an
/// Apple Health export. Records before the fault have been delivered.
public struct ExportSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

/// A streaming reader of Apple Health's `export.xml`: bytes go in, in chunks of any size,
/// and each `<Record>` comes out as soon as it is complete.
///
/// It is the small subset of XML the export uses, read strictly where it matters: the
/// prolog, comments, a DOCTYPE with an internal subset (skipped, whatever it declares),
/// elements with quoted attributes (a `>` inside quotes included), character and the five
/// predefined entity references, CDATA and text (skipped). Elements must nest; the root
/// must be `<HealthData>`. Records may sit inside other elements (a `<Correlation>`); a
/// `<MetadataEntry>` belongs to the record it is a child of, never to a workout.
///
/// Memory: the unread tail of the last chunk plus one construct (a tag, a comment, the
/// DOCTYPE), at most `maximumConstructBytes`. Complexity: O(bytes).
public struct ExportScanner {
    /// The longest single tag, comment or DOCTYPE accepted (a record tag is ~500 bytes).
    public static let maximumConstructBytes = 16 << 20

    private var buffer: [UInt8] = []
    /// Line number at `buffer[0]`.
    private var line = 1
    private var stack: [String] = []
    private var pending: ExportRecord?
    private var rootClosed = false
    public private(set) var rootName: String?
    /// Bytes consumed so far (fed and fully processed).
    public private(set) var bytesConsumed = 0

    public init() {}

    /// Reads `chunk` and calls `body` with each record it completes, in file order.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (ExportRecord) throws -> Void) throws {
        buffer.append(contentsOf: chunk)
        try process(atEnd: false, body)
    }

    /// Ends the input: throws if the file stopped inside an element or a construct.
    public mutating func finish(_ body: (ExportRecord) throws -> Void) throws {
        try process(atEnd: true, body)
        if !buffer.isEmpty {
            throw ExportSyntaxError(line: line, message: "the file ends inside a tag or comment (cut short? export again, or unzip again)")
        }
        if let open = stack.last {
            throw ExportSyntaxError(line: line, message: "the file ends inside <\(open)> (cut short? export again, or unzip again)")
        }
        if rootName == nil {
            throw ExportSyntaxError(line: line, message: "no <HealthData> element: this is not an Apple Health export.xml")
        }
    }

    private mutating func process(atEnd: Bool, _ body: (ExportRecord) throws -> Void) throws {
        var consumed = 0
        var lineAtConsumed = line
        defer {
            if consumed > 0 { buffer.removeFirst(consumed) }
            bytesConsumed += consumed
            line = lineAtConsumed
        }
        try buffer.withUnsafeBufferPointer { b in
            var p = 0
            var lineNow = line
            let n = b.count
            func advance(to q: Int) {
                lineNow += ExportScanner.newlines(b, p, q)
                p = q
            }
            while p < n {
                guard let lt = ExportScanner.find(60, in: b, from: p) else {
                    try checkText(b, p, n, lineNow)
                    advance(to: n)
                    break
                }
                try checkText(b, p, lt, lineNow)
                advance(to: lt)
                guard let end = try constructEnd(b, lt, atEnd: atEnd, lineNow) else {
                    if n - lt > ExportScanner.maximumConstructBytes {
                        throw ExportSyntaxError(line: lineNow, message: "a tag longer than \(ExportScanner.maximumConstructBytes >> 20) MiB: this is not an Apple Health export.xml")
                    }
                    break
                }
                if b[lt + 1] != 33 && b[lt + 1] != 63 { // not <! or <?
                    try element(b, lt, end, lineNow, body)
                }
                advance(to: end)
            }
            consumed = p
            lineAtConsumed = lineNow
        }
    }

    /// Only whitespace may stand outside the root element (text inside it is skipped).
    private func checkText(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, _ line: Int) throws {
        guard stack.isEmpty else { return }
        var i = from
        while i < to {
            let c = b[i]
            if !(c == 32 || c == 9 || c == 10 || c == 13) {
                if i == 0, bytesConsumed == 0, to - from >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { i += 3; continue }
                let message = rootName == nil && bytesConsumed == 0 && i == 0
                    ? "the file does not start with XML: this is not an Apple Health export.xml"
                    : "text outside the <HealthData> element"
                throw ExportSyntaxError(line: line + ExportScanner.newlines(b, from, i), message: message)
            }
            i += 1
        }
    }

    /// The index just past the construct starting with `<` at `lt`, or nil when the buffer
    /// does not hold all of it yet.
    private func constructEnd(_ b: UnsafeBufferPointer<UInt8>, _ lt: Int, atEnd: Bool, _ line: Int) throws -> Int? {
        let n = b.count
        guard lt + 1 < n else { return nil }
        switch b[lt + 1] {
        case 63: // <? … ?>
            return ExportScanner.find([63, 62], in: b, from: lt + 2).map { $0 + 2 }
        case 33: // <!
            if ExportScanner.starts(b, lt, "<!--") { return ExportScanner.find([45, 45, 62], in: b, from: lt + 4).map { $0 + 3 } }
            if ExportScanner.starts(b, lt, "<![CDATA[") { return ExportScanner.find([93, 93, 62], in: b, from: lt + 9).map { $0 + 3 } }
            if ExportScanner.starts(b, lt, "<!DOCTYPE") { return ExportScanner.doctypeEnd(b, lt + 9) }
            // Too short to tell yet?
            if n - lt < 9 { return nil }
            throw ExportSyntaxError(line: line, message: "unexpected markup '<!' that is not a comment, CDATA or DOCTYPE")
        default:
            return ExportScanner.tagEnd(b, lt + 1).map { $0 + 1 }
        }
    }

    /// A start or end tag in `b[lt..<end]` (`end` is just past `>`).
    private mutating func element(_ b: UnsafeBufferPointer<UInt8>, _ lt: Int, _ end: Int, _ line: Int,
                                  _ body: (ExportRecord) throws -> Void) throws {
        let gt = end - 1
        if b[lt + 1] == 47 { // </name>
            var e = gt
            while e > lt + 2, ExportScanner.isSpace(b[e - 1]) { e -= 1 }
            let name = String(decoding: UnsafeBufferPointer(rebasing: b[(lt + 2)..<e]), as: UTF8.self)
            guard let open = stack.popLast() else {
                throw ExportSyntaxError(line: line, message: "</\(name)> closes nothing")
            }
            guard open == name else {
                throw ExportSyntaxError(line: line, message: "</\(name)> closes <\(open)>: the XML is damaged")
            }
            if stack.isEmpty { rootClosed = true }
            if name == "Record", let record = pending {
                pending = nil
                try body(record)
            }
            return
        }
        let selfClosing = b[gt - 1] == 47
        let contentEnd = selfClosing ? gt - 1 : gt
        var i = lt + 1
        while i < contentEnd, !ExportScanner.isSpace(b[i]) { i += 1 }
        guard i > lt + 1 else { throw ExportSyntaxError(line: line, message: "a '<' that starts no element name") }
        let nameBytes = UnsafeBufferPointer(rebasing: b[(lt + 1)..<i])
        let name = String(decoding: nameBytes, as: UTF8.self)
        if stack.isEmpty {
            guard !rootClosed else { throw ExportSyntaxError(line: line, message: "<\(name)> after the end of <HealthData>") }
            guard name == "HealthData" else {
                throw ExportSyntaxError(line: line, message: "the root element is <\(name)>, not <HealthData>: this is not an Apple Health export.xml")
            }
            rootName = name
        }
        if name == "Record" {
            var record = ExportRecord(line: line)
            var problem: String?
            try ExportScanner.attributes(b, i, contentEnd, line) { key, raw in
                switch key {
                case "type": record.type = ExportScanner.decode(raw, &problem)
                case "sourceName": record.sourceName = ExportScanner.decode(raw, &problem)
                case "sourceVersion": record.sourceVersion = ExportScanner.decode(raw, &problem)
                case "device": record.device = ExportScanner.decode(raw, &problem)
                case "unit": record.unit = ExportScanner.decode(raw, &problem)
                case "creationDate": record.creationDate = ExportScanner.decode(raw, &problem)
                case "startDate": record.startDate = ExportScanner.decode(raw, &problem)
                case "endDate": record.endDate = ExportScanner.decode(raw, &problem)
                case "value": record.value = ExportScanner.decode(raw, &problem)
                default: break
                }
            }
            record.problem = problem
            if selfClosing {
                try body(record)
            } else {
                if let unfinished = pending { try body(unfinished) } // a record inside a record: not in the format
                pending = record
            }
        } else if name == "MetadataEntry", stack.last == "Record", var record = pending {
            var key: String?
            var raw: UnsafeBufferPointer<UInt8>?
            var problem = record.problem
            try ExportScanner.attributes(b, i, contentEnd, line) { k, v in
                if k == "key" { key = ExportScanner.decode(v, &problem) } else if k == "value" { raw = v }
            }
            if let key, let raw, ExportScanner.metadataKeys.contains(key) {
                let value = ExportScanner.decode(raw, &problem)
                switch key {
                case "HKTimeZone": record.timeZone = value
                case "HKExternalUUID": record.externalUUID = value
                case "HKMetadataKeySyncIdentifier": record.syncIdentifier = value
                case "HKMetadataKeySyncVersion": record.syncVersion = value
                default: record.wasUserEntered = value
                }
            }
            record.problem = problem
            pending = record
        } else {
            // Other elements' attributes are only checked for shape.
            try ExportScanner.attributes(b, i, contentEnd, line) { _, _ in }
        }
        if !selfClosing { stack.append(name) }
    }

    static let metadataKeys: Set<String> = ["HKTimeZone", "HKExternalUUID", "HKMetadataKeySyncIdentifier", "HKMetadataKeySyncVersion",
                                            "HKWasUserEntered"]

    /// An attribute value's text, or nil with `problem` set (the first problem is kept).
    private static func decode(_ raw: UnsafeBufferPointer<UInt8>, _ problem: inout String?) -> String? {
        switch XMLText.attributeValue(raw) {
        case .success(let s): return s
        case .failure(let failure):
            if problem == nil { problem = failure.message }
            return nil
        }
    }

    /// Calls `body` with each `name="value"` in `b[from..<to]` (value raw, without quotes).
    private static func attributes(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int, _ line: Int,
                                   _ body: (String, UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        var i = from
        while true {
            while i < to, isSpace(b[i]) { i += 1 }
            if i >= to { return }
            let nameStart = i
            while i < to, b[i] != 61, !isSpace(b[i]) { i += 1 }
            let name = String(decoding: UnsafeBufferPointer(rebasing: b[nameStart..<i]), as: UTF8.self)
            while i < to, isSpace(b[i]) { i += 1 }
            guard i < to, b[i] == 61 else { throw ExportSyntaxError(line: line, message: "attribute \(name) has no value") }
            i += 1
            while i < to, isSpace(b[i]) { i += 1 }
            guard i < to, b[i] == 34 || b[i] == 39 else { throw ExportSyntaxError(line: line, message: "attribute \(name): the value is not quoted") }
            let quote = b[i]
            let valueStart = i + 1
            guard let close = find(quote, in: b, from: valueStart), close < to else {
                throw ExportSyntaxError(line: line, message: "attribute \(name): the quote is never closed")
            }
            try body(name, UnsafeBufferPointer(rebasing: b[valueStart..<close]))
            i = close + 1
            guard i >= to || isSpace(b[i]) else { throw ExportSyntaxError(line: line, message: "attribute \(name): no space before the next attribute") }
        }
    }

    /// The index of the `>` that ends a tag whose name starts at `from`, skipping quoted values.
    static func tagEnd(_ b: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        var i = from
        let n = b.count
        while i < n {
            let c = b[i]
            if c == 62 { return i }
            if c == 34 || c == 39 {
                guard let close = find(c, in: b, from: i + 1) else { return nil }
                i = close
            }
            i += 1
        }
        return nil
    }

    /// The index just past a DOCTYPE's closing `>`, skipping its internal subset (quoted
    /// strings and comments in it included).
    static func doctypeEnd(_ b: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        var i = from
        var inSubset = false
        let n = b.count
        while i < n {
            let c = b[i]
            if c == 34 || c == 39 {
                guard let close = find(c, in: b, from: i + 1) else { return nil }
                i = close + 1
                continue
            }
            if inSubset, c == 60, starts(b, i, "<!--") {
                guard let close = find([45, 45, 62], in: b, from: i + 4) else { return nil }
                i = close + 3
                continue
            }
            if c == 91 { inSubset = true } else if c == 93 { inSubset = false } else if c == 62, !inSubset { return i + 1 }
            i += 1
        }
        return nil
    }

    @inline(__always) static func isSpace(_ c: UInt8) -> Bool { c == 32 || c == 10 || c == 9 || c == 13 }

    static func starts(_ b: UnsafeBufferPointer<UInt8>, _ at: Int, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard at + count <= b.count else { return false }
        let t = text.utf8Start
        for k in 0..<count where b[at + k] != t[k] { return false }
        return true
    }

    static func find(_ byte: UInt8, in b: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard from < b.count, let base = b.baseAddress,
              let hit = memchr(base + from, Int32(byte), b.count - from) else { return nil }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    static func find(_ pattern: [UInt8], in b: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        var i = from
        while let hit = find(pattern[0], in: b, from: i) {
            guard hit + pattern.count <= b.count else { return nil }
            var k = 1
            while k < pattern.count, b[hit + k] == pattern[k] { k += 1 }
            if k == pattern.count { return hit }
            i = hit + 1
        }
        return nil
    }

    static func newlines(_ b: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> Int {
        var count = 0
        var i = from
        while i < to {
            count &+= b[i] == 10 ? 1 : 0
            i &+= 1
        }
        return count
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
