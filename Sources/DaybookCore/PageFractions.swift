extension FreshnessPolicy {
    /// A page-fraction override that is not one: which part, and why.
    public struct PageFractionError: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// Not a plain decimal from 0 to 1 ("0.25"; "1e-1" and "2" are not).
            case notAFraction(String)
            /// A comma-separated part that is not `SOURCE=F`.
            case notSourceAndFraction(String)
            /// A source given twice.
            case namedTwice(String)
        }

        public var kind: Kind

        public init(_ kind: Kind) { self.kind = kind }

        public var description: String {
            switch kind {
            case .notAFraction(let text): "'\(text)' is not a number from 0 to 1 (the share of a source's users that must be stale to page)"
            case .notSourceAndFraction(let part): "'\(part)' is not SOURCE=F (e.g. watch=0.1)"
            case .namedTwice(let source): "source '\(source)' is given twice; give each source once"
            }
        }
    }

    /// Overrides page fractions: `0.2` for every source (the default rule and each listed
    /// source), or `watch=0.1,phone=0.25` for the sources named (an unlisted one gets the
    /// default rule's threshold). Returns the sources named, in order.
    ///
    ///     var policy = FreshnessPolicy()
    ///     try policy.applyPageFractions("watch=0.1")   // ["watch"]
    ///
    /// - Throws: `PageFractionError`; the policy is then unchanged only in the sources not
    ///   yet reached, so a caller that throws away the policy on error loses nothing.
    @discardableResult
    public mutating func applyPageFractions(_ text: String) throws(PageFractionError) -> [String] {
        func fraction(_ s: Substring) throws(PageFractionError) -> Double {
            // Plain decimals only: "0x1p-3" or "1e-1" are numbers to Double, not to a person reading the cron line.
            guard s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let f = Double(s), f >= 0, f <= 1 else {
                throw PageFractionError(.notAFraction(String(s)))
            }
            return f
        }
        if !text.contains("=") {
            let f = try fraction(Substring(text))
            defaultRule.pageFraction = f
            for name in sources.keys { sources[name]?.pageFraction = f }
            return []
        }
        var named: [String] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pieces.count == 2, !pieces[0].isEmpty else { throw PageFractionError(.notSourceAndFraction(String(part))) }
            let source = String(pieces[0])
            guard !named.contains(source) else { throw PageFractionError(.namedTwice(source)) }
            named.append(source)
            var rule = rule(for: source)
            rule.pageFraction = try fraction(pieces[1])
            sources[source] = rule
        }
        return named
    }
}
