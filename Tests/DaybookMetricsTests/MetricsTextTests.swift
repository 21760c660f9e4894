import DaybookMetrics
import DaybookTestSupport
import Foundation
import Testing

@Suite struct MetricsTextTests {
    let scratch = TemporaryDirectory()

    /// The families `daybook stale --metrics-file` writes, as an example of another command's use.
    static func staleExample() -> MetricsText {
        var m = MetricsText()
        for (source, pairs, users, fraction) in [("watch", 3, 40, 0.075), ("phone", 0, 52, 0.0)] {
            m.gauge("daybook_stale_pairs", help: "(user, source) pairs silent past the source's threshold.", value: pairs, labels: ["source": source])
            m.gauge("daybook_source_users", help: "Users with at least one check-in or sample from the source.", value: users, labels: ["source": source])
            m.gauge("daybook_stale_fraction", help: "Stale users of the source over all its users (canaries excluded).", value: fraction, labels: ["source": source])
        }
        m.gauge("daybook_canaries_unreported", help: "Canaries the detector failed to report as stale.", value: 0)
        m.gauge("daybook_canary_check_ok", help: "1 if every canary was reported stale, else 0.", value: 1)
        return m
    }

    @Test func writesHelpTypeAndEveryFamilyOnceWithItsSamplesTogether() {
        var m = MetricsText()
        m.counter("daybook_events_applied_total", help: "Events applied.", value: 12)
        m.gauge("daybook_partition_lag_messages", help: "Messages behind.", value: 0, labels: ["topic": "health-samples", "partition": "0"])
        m.counter("daybook_dead_letters_total", help: "Dead letters.", value: 3)
        // Added after another family: still written with its first sample.
        m.gauge("daybook_partition_lag_messages", help: "Messages behind.", value: 42, labels: ["topic": "health-samples", "partition": "1"])
        #expect(m.familyNames == ["daybook_events_applied_total", "daybook_partition_lag_messages", "daybook_dead_letters_total"])
        #expect(m.text == """
        # HELP daybook_events_applied_total Events applied.
        # TYPE daybook_events_applied_total counter
        daybook_events_applied_total 12
        # HELP daybook_partition_lag_messages Messages behind.
        # TYPE daybook_partition_lag_messages gauge
        daybook_partition_lag_messages{topic="health-samples",partition="0"} 0
        daybook_partition_lag_messages{topic="health-samples",partition="1"} 42
        # HELP daybook_dead_letters_total Dead letters.
        # TYPE daybook_dead_letters_total counter
        daybook_dead_letters_total 3

        """)
    }

    @Test func theStaleFamiliesAsAnotherCommandWritesThem() {
        #expect(Self.staleExample().text == """
        # HELP daybook_stale_pairs (user, source) pairs silent past the source's threshold.
        # TYPE daybook_stale_pairs gauge
        daybook_stale_pairs{source="watch"} 3
        daybook_stale_pairs{source="phone"} 0
        # HELP daybook_source_users Users with at least one check-in or sample from the source.
        # TYPE daybook_source_users gauge
        daybook_source_users{source="watch"} 40
        daybook_source_users{source="phone"} 52
        # HELP daybook_stale_fraction Stale users of the source over all its users (canaries excluded).
        # TYPE daybook_stale_fraction gauge
        daybook_stale_fraction{source="watch"} 0.075
        daybook_stale_fraction{source="phone"} 0
        # HELP daybook_canaries_unreported Canaries the detector failed to report as stale.
        # TYPE daybook_canaries_unreported gauge
        daybook_canaries_unreported 0
        # HELP daybook_canary_check_ok 1 if every canary was reported stale, else 0.
        # TYPE daybook_canary_check_ok gauge
        daybook_canary_check_ok 1

        """)
    }

    @Test func escapesLabelValuesAndHelpText() {
        var m = MetricsText()
        m.gauge("x_info", help: #"a \ back"slash"# + "\nand a second line", value: 1,
                labels: ["path": #"C:\dir"#, "quote": #"say "hi""#, "lines": "one\ntwo", "unicode": "Zoë ☂"])
        #expect(m.text == #"""
        # HELP x_info a \\ back"slash\nand a second line
        # TYPE x_info gauge
        x_info{path="C:\\dir",quote="say \"hi\"",lines="one\ntwo",unicode="Zoë ☂"} 1

        """#)
    }

    @Test func histogramBucketsAreCumulativeWithInfSumAndCount() {
        var h = Histogram(upperBounds: [0.005, 0.1, 1, 2.5])
        for v in [0.001, 0.005, 0.05, 0.07, 0.2, 3, 40] { h.observe(v) }
        #expect(h.bucketCounts == [2, 2, 1, 0, 2])
        #expect(h.cumulativeCounts == [2, 4, 5, 5])
        #expect(h.count == 7)
        var m = MetricsText()
        m.histogram("daybook_batch_duration_seconds", help: "Batch time.", h, labels: ["topic": "t"])
        #expect(m.text == """
        # HELP daybook_batch_duration_seconds Batch time.
        # TYPE daybook_batch_duration_seconds histogram
        daybook_batch_duration_seconds_bucket{topic="t",le="0.005"} 2
        daybook_batch_duration_seconds_bucket{topic="t",le="0.1"} 4
        daybook_batch_duration_seconds_bucket{topic="t",le="1"} 5
        daybook_batch_duration_seconds_bucket{topic="t",le="2.5"} 5
        daybook_batch_duration_seconds_bucket{topic="t",le="+Inf"} 7
        daybook_batch_duration_seconds_sum{topic="t"} 43.326
        daybook_batch_duration_seconds_count{topic="t"} 7

        """)
    }

    @Test func anEmptyHistogramAndTheDefaultBuckets() {
        var m = MetricsText()
        m.histogram("h_seconds", help: "h", Histogram(upperBounds: Histogram.secondsFromMillisecondToHalfMinute + [.infinity]))
        let lines = m.text.split(separator: "\n")
        #expect(lines.count == 2 + 14 + 1 + 2)
        #expect(lines[2] == #"h_seconds_bucket{le="0.001"} 0"#)
        #expect(lines[15] == #"h_seconds_bucket{le="30"} 0"#)
        #expect(lines[16] == #"h_seconds_bucket{le="+Inf"} 0"#)
        #expect(lines.suffix(2) == ["h_seconds_sum 0", "h_seconds_count 0"])
    }

    @Test func aNaNObservationCountsOnlyInInf() {
        var h = Histogram(upperBounds: [1])
        h.observe(.nan)
        #expect(h.cumulativeCounts == [0])
        #expect(h.count == 1)
        #expect(h.sum.isNaN)
    }

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (12.0, "12"), (-3.0, "-3"), (1_717_171_717.0, "1717171717"),
        (1e15, "1000000000000000"), (9_007_199_254_740_993.0, "9007199254740992"),
        (0.001, "0.001"), (0.0025, "0.0025"), (1_717_171_717.123, "1717171717.123"), (1e-7, "1e-07"),
        (1e20, "1e+20"), (Double.nan, "NaN"), (Double.infinity, "+Inf"), (-Double.infinity, "-Inf"),
    ])
    func numbersAreWrittenAsPrometheusParsesThem(value: Double, text: String) {
        #expect(MetricsText.number(value) == text)
        // Go's ParseFloat (Prometheus's parser) reads these as Swift does, bar the infinities' sign.
        if value.isFinite { #expect(Double(text) == value || (value == 0 && Double(text) == 0)) }
    }

    @Test func promtoolFindsTheTextCleanNoErrorsAndNoLintWarnings() throws {
        var m = Self.staleExample()
        m.counter("daybook_events_applied_total", help: "Events applied.", value: 5)
        var h = Histogram(upperBounds: Histogram.secondsFromMillisecondToHalfMinute)
        h.observe(0.012)
        m.histogram("daybook_batch_duration_seconds", help: "Batch time.", h)
        m.gauge("escape_test_info", help: "back \\ slash\nnewline", value: .nan, labels: ["v": "a\"b\\c\nd"])
        let check = try Promtool.checkMetrics(m.text)
        #expect(check.isClean, "promtool exit \(check.status): \(check.output)\n\(m.text)")
    }

    @Test func promtoolCatchesWhatItShouldSoItsCleanVerdictMeansSomething() throws {
        let unsuffixed = try Promtool.checkMetrics("# HELP x A counter.\n# TYPE x counter\nx 1\n")
        #expect(unsuffixed.status != 0 && unsuffixed.output.contains("_total"), "\(unsuffixed)")
        let twice = try Promtool.checkMetrics("# HELP a_total x\n# TYPE a_total counter\na_total 1\n# HELP a_total x\n# TYPE a_total counter\na_total 2\n")
        #expect(twice.status != 0, "\(twice)")
    }

    // MARK: The file

    @Test func writeReplacesTheFileWholeAndLeavesNoTemporary() throws {
        let path = scratch.path + "/daybook.prom"
        var m = MetricsText()
        m.counter("a_total", help: "a", value: 1)
        try m.write(to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == m.text)
        m.counter("b_total", help: "b", value: 2)
        try m.write(to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == m.text)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["daybook.prom"])
        // 0644 less the umask: node_exporter reads it as another user.
        let mask = umask(0)
        umask(mask)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == Int(0o644 & ~mask))
    }

    @Test func aFailedWriteNamesThePathAndKeepsTheOldFile() throws {
        let missing = scratch.path + "/no-such-dir/daybook.prom"
        #expect(throws: MetricsFileError.self) { try MetricsText().write(to: missing) }
        do {
            try MetricsFile.write("x 1\n", to: missing)
            Issue.record("wrote into a missing directory")
        } catch {
            #expect(error.path == missing)
            #expect(error.kind == .system(step: .create, errno: ENOENT))
            #expect(error.description.contains("cannot write the metrics file \(missing): creating \(missing).tmp-\(getpid()): No such file or directory"), "\(error)")
        }
        // Renaming over a directory fails after the temporary was written: the temporary goes.
        let directory = scratch.path + "/a-directory.prom"
        try FileManager.default.createDirectory(atPath: directory + "/inside", withIntermediateDirectories: true)
        do {
            try MetricsFile.write("x 1\n", to: directory)
            Issue.record("renamed over a directory")
        } catch {
            guard case .system(.rename, _) = error.kind else { Issue.record("\(error)"); return }
            #expect(error.description.contains("renaming \(directory).tmp-\(getpid()) to \(directory)"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: MetricsFile.temporaryPath(for: directory)))
    }

    @Test func checkDestinationNamesWhatIsWrongBeforeAnythingIsWritten() throws {
        let file = try scratch.file("x", suffix: ".txt")
        let cases: [(String, MetricsFileError.Kind, String)] = [
            (scratch.path + "/missing/daybook.prom", .missingDirectory, "directory \(scratch.path)/missing does not exist"),
            (file + "/daybook.prom", .notADirectory, "\(file) is not a directory"),
            (scratch.path, .isDirectory, "\(scratch.path) is a directory; name a file in it, such as \(scratch.path)/daybook.prom"),
            ("", .missingDirectory, "the metrics file path is empty"),
        ]
        for (path, kind, text) in cases {
            do {
                try MetricsFile.checkDestination(path)
                Issue.record("\(path) passed")
            } catch {
                #expect(error.kind == kind, "\(path)")
                #expect(error.description.contains(text), "\(error)")
            }
        }
        try MetricsFile.checkDestination(scratch.path + "/daybook.prom")
        try MetricsFile.checkDestination("daybook.prom")
    }
}
