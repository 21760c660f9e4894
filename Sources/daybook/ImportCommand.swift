import DaybookConfiguration
import DaybookCore
import DaybookFiles
import DaybookImport
import DaybookImportFiles
import DaybookStore
import DaybookSupport
import Foundation

/// `daybook import apple-health`: an Apple Health export (export.xml or export.zip) → events,
/// written as JSON lines or published like `daybook publish`; `import generate`: a synthetic
/// export of a given size, for benchmarks and trying it out.
enum ImportCommand: Subcommand {
    static let name = "import"
    static let abstract = "Convert an Apple Health export into events; write them or publish them."
    static let usage = """
    import apple-health FILE --user U [--zone Z] [--source-map RULE]... [--out F [--config FILE] | --brokers B [--topic T] [--config FILE] [--connect-timeout S]]
           daybook import generate [--megabytes N] [--seed N] [--days N] [--out F]
    """
    static let options = [
        OptionSpec(name: "--user", value: "U", help: "The Daybook user the export belongs to (required)."),
        OptionSpec(name: "--zone", value: "Z", help: "IANA zone of records without HKTimeZone metadata (required if there are any)."),
        OptionSpec(name: "--source-map", value: "RULE", help: "[name:|version:|model:]TEXT=SOURCE, tried in order before the device model (repeatable).", repeatable: true),
        OptionSpec(name: "--out", value: "F", help: "Write the events to F (replaced once complete; a symlink's target is, the link stays; a FIFO or device is written through) instead of standard output."),
        OptionSpec(name: "--brokers", value: "B", help: "Publish the events to this cluster instead, keyed by user, as 'daybook publish' does."),
        SharedOptions.topic("With --brokers: the topic (default health-samples)."),
        SharedOptions.config("The metrics it adds (their health_kit types are imported); with --brokers, or without --out, also kafka.properties, kafka.secrets, kafka.producer (as publish)."),
        KafkaOptions.connectTimeout,
        OptionSpec(name: "--megabytes", value: "N", help: "generate: about how large the export is (default 200)."),
        OptionSpec(name: "--seed", value: "N", help: "generate: random seed, for a repeatable export (default 1)."),
        OptionSpec(name: "--days", value: "N", help: "generate: days the records spread over (default 730)."),
    ]
    static let discussion = """
    FILE is the export.xml of the Health app's "Export All Health Data", its export.zip
    (read with Debian's unzip, no temporary copy), or - for standard input. The XML is
    streamed: memory does not grow with the file. Records of every type of the metric
    catalogue (topics/README.md) become sample-added events (schema 1) with the record's own
    unit: HKQuantityTypeIdentifier StepCount, DistanceWalkingRunning, DistanceCycling,
    ActiveEnergyBurned, BasalEnergyBurned, FlightsClimbed, AppleExerciseTime,
    AppleStandTime, DietaryWater, DietaryEnergyConsumed, HeartRate, RestingHeartRate,
    HeartRateVariabilitySDNN, BodyMass, OxygenSaturation (its fraction of 1 as a percent)
    and RespiratoryRate, and HKCategoryTypeIdentifierSleepAnalysis's asleep values (as the
    minutes they cover; in bed and awake are counted and named). With --config, the types
    its metrics section adds too (without --out, --config also means publishing, to its
    kafka.bootstrap.servers). Other types are counted and skipped, and the summary names
    them.

    Zones: a record's zone is its HKTimeZone metadata, else --zone. The offsets printed in
    the export are the phone's offset when it exported, not when it recorded, so they are
    never used as a zone. Without --zone, a record lacking HKTimeZone stops the output and
    the import ends naming how many lacked it.

    Sources: HKWasUserEntered=1 is manual; then --source-map rules, in order; then a device
    with model:Watch is watch, with model:iPhone phone; anything else a slug of sourceName
    ("Sleep Cycle" is sleep-cycle). Exports with anonymised names may leave only the
    version as a clue: --source-map version:10.2=watch.

    Uuids depend only on the record (HKExternalUUID or HKMetadataKeySyncIdentifier when
    present, else its fields with the device's pointer removed, plus an occurrence number
    for byte-identical records): importing the same file again, or with another --zone or
    --source-map, replaces samples instead of adding them.

    Progress (records/s, bytes read of the total) and a summary (records per type and
    source, what was skipped and why, zones used, time span) go to standard error. With
    --out or --brokers nothing is written or published unless the whole file was read:
    --out is written as OUT.tmp-PID beside OUT and renamed over it at the end (a symlink
    is followed deliberately: its target is replaced, the link stays; a FIFO or character
    device, /dev/stdout on a pipe, is written through as standard output is, never
    replaced; a directory, a link to nothing or a block device is refused, 64; --out may
    not name FILE itself, through a symlink either, nor standard input's file with FILE
    -); --brokers stages the events in
    $TMPDIR/daybook-UID/daybook-import.tmp-PID (about 330 bytes each) and then publishes
    them as 'daybook publish' does, waiting for every delivery report. Staging left by a
    run that was killed (kill -9) is removed by the next import.

    'import generate' writes a synthetic export.xml (quirks included) of about
    --megabytes MB to standard output or --out; import it with --zone Europe/Berlin.

    EXIT CODES: 0 every record of a known type became an event; 65 some records were
    rejected (named in the summary; the others were written), or FILE is not a readable
    export (damaged or cut-short XML: nothing written with --out or --brokers); 64 usage
    (including records without HKTimeZone and no --zone, and --out naming FILE); 66 FILE
    missing or unreadable, a .zip without export.xml or without unzip, or a damaged .zip
    (with unzip's own reason, e.g. a bad CRC); 69 the cluster did not answer or some
    deliveries failed; 74 the output or the staging file could not be written; 75
    interrupted (Ctrl-C, SIGTERM) before the end: nothing written with --out or --brokers;
    78 bad configuration.

    EXAMPLES:
      daybook import apple-health export.zip --user ana --zone Europe/Berlin --out ana.jsonl
      daybook import apple-health apple_health_export/export.xml --user ana --zone Europe/Berlin --brokers localhost:9092
      daybook import generate --megabytes 200 --out /tmp/export.xml
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        switch arguments.positionals.first {
        case "apple-health"?:
            guard arguments.positionals.count == 2, let path = arguments.positionals.last else {
                throw CLIError.usage("import apple-health takes exactly one FILE (export.xml, export.zip, or - for stdin)")
            }
            return try importAppleHealth(path, arguments)
        case "generate"?:
            guard arguments.positionals.count == 1 else { throw CLIError.usage("import generate takes no FILE (use --out)") }
            return try generate(arguments)
        case let other?:
            throw CLIError.usage("'\(TerminalText.escaped(other))' is not a kind of import; use apple-health (or generate)")
        case nil:
            throw CLIError.usage("import needs a kind: daybook import apple-health FILE --user U")
        }
    }

    // MARK: apple-health

    /// The summary names the importer's options by their flags.
    static let optionNames = ImportSummary.Names(defaultZone: "--zone", sourceMapRule: "--source-map")

    /// Where the lines are published from the staging file, with `--brokers`.
    private struct Publishing {
        var config: DaybookConfiguration
        var timeout: Duration
        var topic: String
    }

    static func importAppleHealth(_ path: String, _ arguments: ParsedArguments) throws -> Int32 {
        guard let user = arguments.value("--user") else {
            throw CLIError.usage("import apple-health needs --user U: the Daybook user the export belongs to")
        }
        var rules: [SourceMap.Rule] = []
        for spec in arguments.all("--source-map") {
            switch SourceMap.rule(spec) {
            case .success(let rule): rules.append(rule)
            case .failure(let e): throw CLIError.usage("--source-map \(TerminalText.escaped(e.message))")
            }
        }
        var importer: AppleHealthImporter
        do {
            importer = try AppleHealthImporter(options: .init(user: user, zone: arguments.value("--zone"), sourceMap: SourceMap(rules: rules)))
        } catch {
            let option = switch error.kind {
            case .emptyUser, .userNotNFC: "--user"
            case .unknownZone(let zone): "--zone \(JSONWriter.quoted(zone))"
            }
            throw CLIError.usage(TerminalText.escaped("\(option) \(error.reason)"))
        }
        let publishes = arguments.value("--brokers") != nil || arguments.value("--config") != nil
        let destination: ImportDestination
        var publishing: Publishing?
        if let out = arguments.value("--out") {
            guard arguments.value("--brokers") == nil else { throw CLIError.usage("give --out or --brokers, not both") }
            // With --out, --config brings only the metrics it adds (their types are imported).
            if let config = arguments.value("--config") { _ = try DaybookConfiguration.load(config, resolvingSecrets: false) }
            destination = try output(out, input: path)
        } else if publishes {
            let (config, timeout) = try KafkaOptions.load(arguments, command: "import")
            destination = .staging
            publishing = Publishing(config: config, timeout: timeout, topic: try arguments.topic(default: "health-samples"))
        } else {
            guard arguments.value("--topic") == nil else { throw CLIError.usage("--topic needs --brokers") }
            destination = .standardOutput
        }

        let input: ExportInput
        do { input = try ExportInput.open(path) } catch { throw CLIError(export: error) }
        defer { input.close() }
        Shutdown.install() // Ctrl-C and SIGTERM end the import cleanly: no half-written --out, nothing staged left
        let sink = try LineSink.open(destination)
        defer { sink.discard() }

        var progress = ProgressReporter()
        let bytesRead: Int
        do {
            bytesRead = try AppleHealthImport.read(input, into: &importer, shouldStop: { Shutdown.isRequested }, progress: { bytesRead, summary in
                let rate = Double(summary.records) / max(progress.elapsed, 0.001)
                let read = input.total.map { "\(Int(Double(bytesRead) * 100 / Double(max($0, 1))))% (\(megabytes(bytesRead)) of \(megabytes($0)))" } ?? megabytes(bytesRead)
                progress.update("import: \(read), \(NumberText.grouped(summary.records)) records (\(NumberText.grouped(Int(rate))) records/s), \(NumberText.grouped(summary.events)) events")
            }, write: { try sink.write($0) })
        } catch AppleHealthImport.Stop.interrupted(let bytesRead) {
            progress.finish()
            let undone: String
            switch destination {
            case .standardOutput, .stream: undone = "the events so far were written"
            case .file: undone = "nothing was written"
            case .staging: undone = "nothing was published"
            }
            throw CLIError(code: ExitCode.tempFail, message: "interrupted after \(megabytes(bytesRead)) of \(input.name); \(undone) (rerun: the uuids are the same)")
        } catch AppleHealthImport.Stop.damaged(let error, _) {
            progress.finish()
            let partial: String
            switch destination {
            case .standardOutput, .stream:
                try? sink.flush()
                partial = "the \(importer.summary.events) events before it were written"
            case .file: partial = "nothing was written"
            case .staging: partial = "nothing was published"
            }
            if importer.summary.records > 0 { printError(TerminalText.escaped(importer.summary.render(destination: "converted", names: ImportCommand.optionNames), keepingNewlines: true)) }
            throw CLIError(code: ExitCode.dataError, message: "\(TerminalText.escaped(input.name)): \(TerminalText.escaped(error.description)); \(partial)")
        } catch let error as ExportInputError {
            progress.finish()
            throw CLIError(export: error)
        }
        progress.finish()
        // Reading is over; publishing (below) is as interruptible as 'daybook publish'.
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        let summary = importer.summary
        if summary.missingZone > 0 {
            try? sink.flush()
            printError(TerminalText.escaped(summary.render(destination: "converted", names: ImportCommand.optionNames), keepingNewlines: true))
            let known = summary.missingZone + summary.events + summary.rejectedCount
            let output: String
            switch destination {
            case .standardOutput, .stream: output = "the output stops before line \(summary.firstMissingZoneLine ?? 0) of the export"
            case .file: output = "nothing was written"
            case .staging: output = "nothing was published"
            }
            throw CLIError.usage("\(NumberText.grouped(summary.missingZone)) of \(NumberText.grouped(known)) records of the types Daybook imports have no HKTimeZone metadata (the first at line \(summary.firstMissingZoneLine ?? 0)); give --zone with the zone the phone was in when they were recorded (e.g. --zone Europe/Berlin; records with HKTimeZone keep theirs); \(output)")
        }
        try sink.flush()

        var status = summary.rejectedCount == 0 ? ExitCode.ok : ExitCode.dataError
        let seconds = progress.elapsed
        let rate = "\(NumberText.grouped(summary.records)) records in \(String(format: "%.2f", seconds)) s (\(NumberText.grouped(Int(Double(summary.records) / max(seconds, 0.001)))) records/s, \(megabytes(bytesRead)))"
        switch destination {
        case .standardOutput:
            printError(TerminalText.escaped(summary.render(destination: "written", names: ImportCommand.optionNames), keepingNewlines: true))
            printError("import: \(rate)")
        case .file(let out):
            try sink.commit(to: out)
            printError(TerminalText.escaped(summary.render(destination: "written to \(out)", names: ImportCommand.optionNames), keepingNewlines: true))
            printError("import: \(rate)")
        case .stream(let out):
            try sink.close()
            printError(TerminalText.escaped(summary.render(destination: "written to \(out)", names: ImportCommand.optionNames), keepingNewlines: true))
            printError("import: \(rate)")
        case .staging:
            guard let publishing else { break } // set with .staging
            let topic = publishing.topic
            printError(TerminalText.escaped(summary.render(destination: "converted", names: ImportCommand.optionNames), keepingNewlines: true))
            printError("import: \(rate); publishing to \(topic)")
            try sink.close()
            let staged = try Files.input(sink.path, mapping: false)
            let result = try PublishCommand.publish(staged, connection: publishing.config.connection, producer: publishing.config.producer, topic: topic,
                                                    connectTimeout: publishing.timeout) { number, error in
                printError("event \(number): \(error)") // cannot happen: every line was checked
            }
            printError("import: published \(NumberText.grouped(result.published)) of \(NumberText.grouped(result.read)) events to \(topic) in \(String(format: "%.2f", result.progress.elapsed)) s")
            if !result.failedLines.isEmpty {
                printError("import: \(result.failedLines.count) events were not delivered — \(result.firstFailure.map { "\($0)" } ?? "unknown error"). Importing again is safe: the uuids are the same, so delivered events change nothing.")
                status = ExitCode.unavailable
            } else if result.rejected > 0 {
                status = ExitCode.dataError
            }
        }
        return status
    }

    /// `--out` as a destination (`ImportDestination.output`), refusals as usage errors (64)
    /// but a path the system would not describe (74). `input` is the export's FILE, when
    /// `--out` must not be it.
    private static func output(_ out: String, input: String? = nil) throws -> ImportDestination {
        do throws(ImportDestinationError) {
            if let input { return try ImportDestination.output(out, input: input) }
            return try ImportDestination.output(out)
        } catch {
            switch error.kind {
            case .isTheInput:
                let name = input == "-" ? "standard input" : TerminalText.escaped(input ?? "")
                throw CLIError.usage("--out \(TerminalText.escaped(out)) is the export being imported (\(name)): writing it would replace the export; give --out another file")
            case .path(let path):
                if case .system = path.kind { throw CLIError(code: ExitCode.ioError, message: "--out \(TerminalText.escaped(path.description))") }
                throw CLIError.usage("--out \(TerminalText.escaped(path.description))")
            }
        }
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }

    // MARK: generate

    static func generate(_ arguments: ParsedArguments) throws -> Int32 {
        let megabytes = try arguments.integer("--megabytes", default: 200, in: 1...100_000)
        let seed = try arguments.integer("--seed", default: 1, in: 0...Int(Int32.max))
        let days = try arguments.integer("--days", default: 730, in: 1...36_500)
        let destination = try arguments.value("--out").map { try output($0) } ?? .standardOutput
        let sink = try LineSink.open(destination)
        defer { sink.discard() }
        // 2022-01-01T00:00:00Z: the records span winter and summer, printed at +0200 throughout.
        var generator = ExportGenerator(seed: UInt64(seed), start: 1_640_995_200, days: days)
        let target = megabytes * 1_000_000
        var written = 0
        var records = 0
        try sink.write(generator.header, newline: false)
        written += generator.header.utf8.count
        var progress = ProgressReporter()
        while written < target {
            let xml = generator.next().xml
            try sink.write(xml, newline: false)
            written += xml.utf8.count
            records += 1
            if records % 4_096 == 0 { progress.update("generate: \(ImportCommand.megabytes(written)) of \(megabytes) MB, \(NumberText.grouped(records)) records") }
        }
        try sink.write(generator.footer, newline: false)
        written += generator.footer.utf8.count
        try sink.flush()
        progress.finish()
        if case .file(let replaced) = destination { try sink.commit(to: replaced) } else { try sink.close() }
        printError("generate: \(NumberText.grouped(records)) records, \(ImportCommand.megabytes(written)); import it with --zone \(generator.defaultZone)")
        return ExitCode.ok
    }
}

extension CLIError {
    /// An export that cannot be read (66), with the shell pipeline that imports it anyway
    /// where unzip is the trouble.
    init(export error: ExportInputError) {
        let path = error.path
        let howTo = "or unzip it yourself: unzip -p \(path) apple_health_export/export.xml | daybook import apple-health - --user U --zone Z"
        let message: String
        switch error.kind {
        case .unzipMissing:
            message = "\(path) is a .zip and unzip is not installed: apt-get install unzip (scripts/setup does), \(howTo)"
        case .unzipCannotRun(let reason):
            message = "\(path): cannot run unzip: \(reason); \(howTo)"
        case .noExportXML(let entries):
            let xml = entries.prefix(5).joined(separator: ", ")
            message = "\(path) holds no export.xml (XML entries: \(xml.isEmpty ? "none" : xml)); extract the export's XML yourself: unzip -p \(path) ENTRY | daybook import apple-health - --user U --zone Z"
        case .missing, .unreadable, .isDirectory, .notAZip, .unzipFailed:
            message = "\(error)"
        }
        self.init(code: ExitCode.noInput, message: message)
    }
}
