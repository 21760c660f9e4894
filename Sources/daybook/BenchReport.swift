import DaybookBench
import DaybookCore
import DaybookSupport
import Foundation

/// The pipeline bench's figures for people (a table) and for machines (one JSON line whose
/// keys, `jsonKeys`, BENCHMARKS.md documents).
enum BenchReport {
    /// The JSON line's keys, in order (BENCHMARKS.md documents each).
    static let jsonKeys = [
        "bench", "version", "events", "users", "partitions", "seed", "uuids", "cores", "load_average", "log_bytes", "config",
        "publish_seconds", "publish_events_per_s", "publish_peak_rss_mb",
        "kcat_produce_seconds", "kcat_produce_events_per_s",
        "raw_direct_seconds", "raw_direct_events_per_s",
        "raw_group_seconds", "raw_group_events_per_s", "raw_group_first_message_seconds",
        "project_solo_seconds", "project_solo_events_per_s", "project_solo_peak_rss_mb",
        "project_group_seconds", "project_group_events_per_s", "project_group_peak_rss_mb",
        "restart_solo_seconds", "restart_solo_peak_rss_mb",
        "restart_group_seconds", "restart_group_peak_rss_mb",
        "data_bytes", "data_bytes_per_event", "core_samples_per_s",
        "ratio_project_solo_to_raw_direct", "ratio_project_group_to_raw_group", "ratio_publish_to_kcat_produce",
        "project_solo_cache_hits", "project_solo_cache_misses", "project_solo_cache_evictions",
        "project_group_cache_hits", "project_group_cache_misses", "project_group_cache_evictions",
        "arrival_raw_direct_seconds", "arrival_raw_direct_events_per_s",
        "arrival_raw_group_seconds", "arrival_raw_group_events_per_s",
        "arrival_project_solo_seconds", "arrival_project_solo_events_per_s", "arrival_project_solo_peak_rss_mb",
        "arrival_project_solo_cache_hits", "arrival_project_solo_cache_misses", "arrival_project_solo_cache_evictions",
        "arrival_project_group_seconds", "arrival_project_group_events_per_s", "arrival_project_group_peak_rss_mb",
        "arrival_project_group_cache_hits", "arrival_project_group_cache_misses", "arrival_project_group_cache_evictions",
        "project_solo_cpus", "project_group_cpus", "arrival_project_solo_cpus", "arrival_project_group_cpus",
        "ratio_arrival_project_solo_to_raw_direct", "ratio_arrival_project_group_to_raw_group",
        "instructions_events", "project_solo_instructions_per_event", "kcat_instructions_per_event", "ratio_project_solo_to_kcat_instructions",
        "naive_python_seconds", "ratio_naive_python_to_project_solo",
    ]


    static func table(_ f: PipelineBench.Figures, _ s: PipelineBench.Settings) -> [String] {
        let n = Double(f.events)
        func rate(_ seconds: Double) -> String { NumberText.grouped(n / max(seconds, 1e-9)) }
        func row(_ what: String, _ seconds: Double?, _ rate: String, _ rss: Double?, _ note: String = "") -> String {
            let secs = seconds.map { String(format: "%.2f", $0) } ?? "-"
            let mem = rss.map { String(format: "%.0f MiB", $0) } ?? ""
            return NumberText.leftAligned(what, 46) + NumberText.rightAligned(secs, 8) + NumberText.rightAligned(rate, 13) + NumberText.rightAligned(mem, 11) + (note.isEmpty ? "" : "   " + note)
        }
        let ratios = f.ratios
        return [
            "daybook bench: \(NumberText.grouped(n)) events (\(String(format: "%.1f", Double(f.logBytes) / 1e6)) MB of JSON lines, \(f.users) users, seed \(s.seed)\(s.uuids == .names ? ", uuids as names" : "")), \(s.partitions) partitions, \(ProcessInfo.processInfo.activeProcessorCount) cores\(f.loadAverage.map { String(format: " (load %.2f at start)", $0) } ?? ""), daybook \(Version.string)\(s.config.map { ", project --config \(TerminalText.escaped($0))" } ?? "")",
            "",
            NumberText.leftAligned("", 46) + NumberText.rightAligned("seconds", 8) + NumberText.rightAligned("events/s", 13) + NumberText.rightAligned("peak RSS", 11),
            row("daybook publish (validate, keyed, lz4)", f.publish.seconds, rate(f.publish.seconds), f.publish.peakRSSMegabytes),
            row("kcat -P -K (keyed, same producer settings)", f.kcatProduce, rate(f.kcatProduce), nil, String(format: "publish/kcat %.2f", ratios.publish)),
            row("kcat -C, all partitions (raw direct)", f.rawDirect, rate(f.rawDirect), nil),
            row("kcat -G, consumer group (raw group)", f.rawGroup, rate(f.rawGroup), nil, String(format: "first message at %.2f s", f.rawGroupFirstMessage)),
            row("daybook project --solo", f.projectSolo.seconds, rate(f.projectSolo.seconds), f.projectSolo.peakRSSMegabytes, String(format: "%.2f of raw direct, %.2f CPUs", ratios.solo, f.projectSolo.cpus)),
            row("daybook project (group)", f.projectGroup.seconds, rate(f.projectGroup.seconds), f.projectGroup.peakRSSMegabytes, String(format: "%.2f of raw group, %.2f CPUs", ratios.group, f.projectGroup.cpus)),
            row("arrival order: kcat -C (raw direct)", f.arrival.rawDirect, rate(f.arrival.rawDirect), nil),
            row("arrival order: kcat -G (raw group)", f.arrival.rawGroup, rate(f.arrival.rawGroup), nil),
            row("arrival order: daybook project --solo", f.arrival.projectSolo.seconds, rate(f.arrival.projectSolo.seconds), f.arrival.projectSolo.peakRSSMegabytes,
                String(format: "%.2f of raw direct, %.2f CPUs", f.arrival.ratioSolo, f.arrival.projectSolo.cpus)),
            row("arrival order: daybook project (group)", f.arrival.projectGroup.seconds, rate(f.arrival.projectGroup.seconds), f.arrival.projectGroup.peakRSSMegabytes,
                String(format: "%.2f of raw group, %.2f CPUs", f.arrival.ratioGroup, f.arrival.projectGroup.cpus)),
            row("restart --solo, nothing new", f.restartSolo.seconds, "-", f.restartSolo.peakRSSMegabytes),
            row("restart (group), nothing new, join included", f.restartGroup.seconds, "-", f.restartGroup.peakRSSMegabytes),
            row("core apply + resolve (in process, samples/s)", nil, NumberText.grouped(f.core), nil),
            f.naivePython.map { row("naive Python projector (no dedupe, UTC days)", $0, rate($0), nil, String(format: "project --solo %.1f× as fast", $0 / f.projectSolo.seconds)) }
                ?? "naive Python projector: not measured (\(f.naivePythonSkipped))",
            "solo data directory: \(String(format: "%.1f", Double(f.dataBytes) / 1e6)) MB on disk, \(String(format: "%.0f", Double(f.dataBytes) / max(n, 1))) bytes/event",
            "state cache, project --solo: user order \(cacheText(f.projectSolo)); arrival order \(cacheText(f.arrival.projectSolo))",
            String(format: "project --solo / kcat -C: %.2f in user order, %.2f in arrival order", ratios.solo, f.arrival.ratioSolo),
            f.instructions.map {
                "instructions per event (callgrind, \(NumberText.grouped(Double($0.events))) events in arrival order, \(PipelineBench.instructionPartitions) partitions): "
                    + "project --solo \(NumberText.grouped($0.projectSolo)), kcat -C \(NumberText.grouped($0.kcat)) (\(String(format: "%.1f", $0.ratio))×)"
            } ?? "instructions per event: not measured (--callgrind-events 0, or valgrind missing)",
        ]
    }

    static func cacheText(_ t: PipelineBench.Timed) -> String {
        "\(NumberText.grouped(Double(t.cacheHits))) hits, \(NumberText.grouped(Double(t.cacheMisses))) misses, \(NumberText.grouped(Double(t.cacheEvictions))) evictions"
    }

    static func jsonLine(_ f: PipelineBench.Figures, _ s: PipelineBench.Settings) -> String {
        let n = Double(f.events)
        func secs(_ x: Double) -> String { String(format: "%.3f", x) }
        func rate(_ x: Double) -> String { String(format: "%.0f", n / max(x, 1e-9)) }
        func mb(_ x: Double) -> String { String(format: "%.1f", x) }
        func ratio(_ x: Double) -> String { String(format: "%.3f", x) }
        let ratios = f.ratios
        let values: [String: String] = [
            "bench": "\"pipeline\"", "version": JSONWriter.quoted(Version.string),
            "events": "\(f.events)", "users": "\(f.users)", "partitions": "\(s.partitions)", "seed": "\(s.seed)",
            "uuids": JSONWriter.quoted(s.uuids.rawValue),
            "cores": "\(ProcessInfo.processInfo.activeProcessorCount)", "log_bytes": "\(f.logBytes)",
            "load_average": f.loadAverage.map { String(format: "%.2f", $0) } ?? "null",
            "config": s.config.map(JSONWriter.quoted) ?? "null",
            "publish_seconds": secs(f.publish.seconds), "publish_events_per_s": rate(f.publish.seconds), "publish_peak_rss_mb": mb(f.publish.peakRSSMegabytes),
            "kcat_produce_seconds": secs(f.kcatProduce), "kcat_produce_events_per_s": rate(f.kcatProduce),
            "raw_direct_seconds": secs(f.rawDirect), "raw_direct_events_per_s": rate(f.rawDirect),
            "raw_group_seconds": secs(f.rawGroup), "raw_group_events_per_s": rate(f.rawGroup),
            "raw_group_first_message_seconds": secs(f.rawGroupFirstMessage),
            "project_solo_seconds": secs(f.projectSolo.seconds), "project_solo_events_per_s": rate(f.projectSolo.seconds),
            "project_solo_peak_rss_mb": mb(f.projectSolo.peakRSSMegabytes),
            "project_group_seconds": secs(f.projectGroup.seconds), "project_group_events_per_s": rate(f.projectGroup.seconds),
            "project_group_peak_rss_mb": mb(f.projectGroup.peakRSSMegabytes),
            "restart_solo_seconds": secs(f.restartSolo.seconds), "restart_solo_peak_rss_mb": mb(f.restartSolo.peakRSSMegabytes),
            "restart_group_seconds": secs(f.restartGroup.seconds), "restart_group_peak_rss_mb": mb(f.restartGroup.peakRSSMegabytes),
            "data_bytes": "\(f.dataBytes)", "data_bytes_per_event": String(format: "%.1f", Double(f.dataBytes) / max(n, 1)),
            "core_samples_per_s": String(format: "%.0f", f.core),
            "ratio_project_solo_to_raw_direct": ratio(ratios.solo), "ratio_project_group_to_raw_group": ratio(ratios.group),
            "ratio_publish_to_kcat_produce": ratio(ratios.publish),
            "project_solo_cache_hits": "\(f.projectSolo.cacheHits)", "project_solo_cache_misses": "\(f.projectSolo.cacheMisses)",
            "project_solo_cache_evictions": "\(f.projectSolo.cacheEvictions)",
            "project_group_cache_hits": "\(f.projectGroup.cacheHits)", "project_group_cache_misses": "\(f.projectGroup.cacheMisses)",
            "project_group_cache_evictions": "\(f.projectGroup.cacheEvictions)",
            "arrival_raw_direct_seconds": secs(f.arrival.rawDirect), "arrival_raw_direct_events_per_s": rate(f.arrival.rawDirect),
            "arrival_raw_group_seconds": secs(f.arrival.rawGroup), "arrival_raw_group_events_per_s": rate(f.arrival.rawGroup),
            "arrival_project_solo_seconds": secs(f.arrival.projectSolo.seconds), "arrival_project_solo_events_per_s": rate(f.arrival.projectSolo.seconds),
            "arrival_project_solo_peak_rss_mb": mb(f.arrival.projectSolo.peakRSSMegabytes),
            "arrival_project_solo_cache_hits": "\(f.arrival.projectSolo.cacheHits)", "arrival_project_solo_cache_misses": "\(f.arrival.projectSolo.cacheMisses)",
            "arrival_project_solo_cache_evictions": "\(f.arrival.projectSolo.cacheEvictions)",
            "arrival_project_group_seconds": secs(f.arrival.projectGroup.seconds), "arrival_project_group_events_per_s": rate(f.arrival.projectGroup.seconds),
            "arrival_project_group_peak_rss_mb": mb(f.arrival.projectGroup.peakRSSMegabytes),
            "arrival_project_group_cache_hits": "\(f.arrival.projectGroup.cacheHits)", "arrival_project_group_cache_misses": "\(f.arrival.projectGroup.cacheMisses)",
            "arrival_project_group_cache_evictions": "\(f.arrival.projectGroup.cacheEvictions)",
            "ratio_arrival_project_solo_to_raw_direct": ratio(f.arrival.ratioSolo), "ratio_arrival_project_group_to_raw_group": ratio(f.arrival.ratioGroup),
            "project_solo_cpus": ratio(f.projectSolo.cpus), "project_group_cpus": ratio(f.projectGroup.cpus),
            "arrival_project_solo_cpus": ratio(f.arrival.projectSolo.cpus), "arrival_project_group_cpus": ratio(f.arrival.projectGroup.cpus),
            "instructions_events": f.instructions.map { "\($0.events)" } ?? "null",
            "project_solo_instructions_per_event": f.instructions.map { String(format: "%.0f", $0.projectSolo) } ?? "null",
            "kcat_instructions_per_event": f.instructions.map { String(format: "%.0f", $0.kcat) } ?? "null",
            "ratio_project_solo_to_kcat_instructions": f.instructions.map { ratio($0.ratio) } ?? "null",
            "naive_python_seconds": f.naivePython.map(secs) ?? "null",
            "ratio_naive_python_to_project_solo": f.naivePython.map { ratio($0 / f.projectSolo.seconds) } ?? "null",
        ]
        return "{" + jsonKeys.map { "\"\($0)\":\(values[$0]!)" }.joined(separator: ",") + "}"
    }
}
