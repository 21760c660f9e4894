import DaybookCore

/// A read answer's bytes, written straight into one growing buffer: an `Array` append costs
/// ~100 instructions (its uniqueness and capacity checks, a generic copy), and a week of hour
/// rows makes ~1,000 of them. Times are written digit by digit, and the date of a time is
/// copied from the last one written when they share it (a row's day, start and end nearly
/// always do), so a civil date is computed once per row, not three times.
///
/// Complexity: each write O(its length), amortised (the buffer doubles when full).
struct AnswerBytes: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    /// The civil day number of the last date written, and where its 10 bytes are.
    private var lastDay = Int64.min
    private var lastDateAt = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Room for `n` more bytes.
    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if capacity - count < n { grow(n) }
    }

    private mutating func grow(_ n: Int) {
        let larger = max(2 * capacity, count + n)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        let n = text.utf8CodeUnitCount
        reserve(n)
        (base + count).update(from: text.utf8Start, count: n)
        count += n
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    /// A String's UTF-8 bytes, through its contiguous storage.
    mutating func put(text: String) {
        var text = text
        text.withUTF8 { bytes in
            reserve(bytes.count)
            if let from = bytes.baseAddress { (base + count).update(from: from, count: bytes.count) }
            count += bytes.count
        }
    }

    /// Bytes already in an array (a rare form written by another writer).
    private mutating func put(_ bytes: [UInt8]) {
        reserve(bytes.count)
        bytes.withUnsafeBufferPointer { b in
            if let from = b.baseAddress { (base + count).update(from: from, count: b.count) }
        }
        count += bytes.count
    }

    /// `day.description` (`YYYY-MM-DD`).
    mutating func put(day: CivilDay) {
        if !putDate(Int64(day.number)) { put(text: day.description) }
    }

    /// `HourTotal.localTime(instant, offsetSeconds:)`: RFC 3339 wall time with its offset.
    mutating func put(localTime instant: Instant, offsetSeconds: Int) {
        let wall = instant.nanoseconds + Int64(offsetSeconds) * Instant.nanosPerSecond
        let day = wall >= 0 ? wall / Instant.nanosPerDay : (wall + 1) / Instant.nanosPerDay - 1 // floor
        let inDay = wall - day * Instant.nanosPerDay
        let minutes = abs(offsetSeconds) / 60
        guard inDay % Instant.nanosPerSecond == 0, minutes / 60 < 100, putDate(day) else {
            // Fractions of a second, far years or offsets: HourTotal's own writer.
            var other: [UInt8] = []
            HourTotal.appendLocalTime(instant, offsetSeconds: offsetSeconds, to: &other)
            put(other)
            return
        }
        let secs = Int(inDay / Instant.nanosPerSecond)
        reserve(15)
        let p = base + count
        p[0] = UInt8(ascii: "T")
        Self.twoDigits(secs / 3600, p + 1)
        p[3] = UInt8(ascii: ":")
        Self.twoDigits(secs / 60 % 60, p + 4)
        p[6] = UInt8(ascii: ":")
        Self.twoDigits(secs % 60, p + 7)
        p[9] = offsetSeconds < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+")
        Self.twoDigits(minutes / 60, p + 10)
        p[12] = UInt8(ascii: ":")
        Self.twoDigits(minutes % 60, p + 13)
        count += 15
    }

    /// Writes civil day `day`'s `YYYY-MM-DD` (a copy of the last date when it is the same
    /// day); false, writing nothing, for a year outside 0–9999.
    private mutating func putDate(_ day: Int64) -> Bool {
        reserve(10)
        if day == lastDay {
            (base + count).update(from: base + lastDateAt, count: 10)
            count += 10
            return true
        }
        guard let number = Int32(exactly: day) else { return false }
        let (year, month, dayOfMonth) = CivilDay(number: number).components
        guard (0...9999).contains(year) else { return false }
        let p = base + count
        Self.twoDigits(year / 100, p)
        Self.twoDigits(year % 100, p + 2)
        p[4] = UInt8(ascii: "-")
        Self.twoDigits(month, p + 5)
        p[7] = UInt8(ascii: "-")
        Self.twoDigits(dayOfMonth, p + 8)
        lastDay = day
        lastDateAt = count
        count += 10
        return true
    }

    @inline(__always)
    private static func twoDigits(_ v: Int, _ p: UnsafeMutablePointer<UInt8>) {
        p[0] = UInt8(truncatingIfNeeded: 48 + v / 10)
        p[1] = UInt8(truncatingIfNeeded: 48 + v % 10)
    }

    /// The bytes as a String (they are UTF-8: literals, digits and Strings' own bytes).
    consuming func string() -> String {
        String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }
}
