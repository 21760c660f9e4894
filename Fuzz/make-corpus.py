#!/usr/bin/env python3
"""Writes the checked-in seed corpus under Fuzz/corpus/<target>/ (run from anywhere).

Seeds are: representative lines of examples/week.jsonl (one per shape: user, metric,
source, unit, zone, instant or interval, deletion), the bundled configurations, and named
hostile cases. Crash reproducers (crash-*) found by fuzzing are kept; everything else in
the target directories is rewritten. Keep the total well under 200 KB.
"""
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")


def reset(target):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        if not name.startswith("crash-"):
            os.remove(os.path.join(d, name))
    return d


def write(d, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


week = open(os.path.join(ROOT, "examples", "week.jsonl"), encoding="utf-8").read().splitlines()
shapes = {}
for i, line in enumerate(week):
    e = json.loads(line)
    s = e.get("sample", {})
    key = (e["type"], e["user"], s.get("metric"), s.get("source"), s.get("unit"), s.get("zone"),
           s.get("start") == s.get("end"))
    shapes.setdefault(key, i)
week_seeds = {f"week-{i:03d}": week[i] for i in sorted(shapes.values())}
# Overlapping watch and phone steps, a DST-crossing manual hike, a replaced sample, a
# deletion and the re-add it must block (the last lines of the week).
week_runs = {
    "week-run-000-012": "\n".join(week[0:13]),
    "week-run-840-847": "\n".join(week[840:848]),
}

BASE = {"type": "sample-added", "user": "ana", "sample": {
    "uuid": "u1", "metric": "steps", "source": "watch", "start": "2024-03-31T01:30:00+01:00",
    "end": "2024-03-31T03:30:00+02:00", "value": 1200, "unit": "count", "zone": "Europe/Berlin"}}


def event(**sample):
    e = json.loads(json.dumps(BASE))
    e["sample"].update(sample)
    return json.dumps(e, separators=(",", ":"))


def raw_value(text, metric="steps", unit="count"):
    return event(metric=metric, unit=unit, value=0).replace('"value":0', '"value":' + text)


def nest(n, inner="1"):
    return "[" * n + inner + "]" * n


hostile_events = {
    "year-0001": event(start="0001-01-01T00:00:00Z", end="0001-01-01T00:05:00Z"),
    "year-9999": event(start="9999-12-31T23:55:00Z", end="9999-12-31T23:59:59.999999999Z"),
    "years-1700-2200": event(start="1700-01-01T00:00:00Z", end="2200-01-01T00:00:00Z"),
    "edge-1678-2261": event(start="1678-01-01T00:00:00+00:00", end="2261-12-31T23:59:59-23:59"),
    "leap-day": event(start="2024-02-29T23:59:59.999999999+14:00", end="2024-03-01T00:00:00-12:00"),
    "feb-29-non-leap": event(start="2023-02-29T00:00:00Z", end="2023-03-01T00:00:00Z"),
    "seven-days": event(start="2024-03-01T00:00:00Z", end="2024-03-08T00:00:00Z"),
    "seven-days-1ns": event(start="2024-03-01T00:00:00Z", end="2024-03-08T00:00:00.000000001Z"),
    "instant": event(start="2024-03-31T02:00:00+01:00", end="2024-03-31T01:00:00Z"),
    "end-before-start": event(start="2024-03-31T02:00:00Z", end="2024-03-31T01:59:59.999Z"),
    "frac-12-digits": event(start="2024-03-31T01:00:00.123456789012Z", end="2024-03-31T01:00:00.1234567891z"),
    "t-and-space": event(start="2024-03-31t01:00:00z", end="2024-03-31 02:00:00-00:00"),
    "value-1e308": raw_value("1e308"),
    "value-max-km": raw_value("1.7976931348623157e308", "distance", "km"),
    "value-min-subnormal": raw_value("5e-324"),
    "value-neg-zero": raw_value("-0"),
    "value-neg-zero-hr": raw_value("-0.0", "heart_rate", "count/min"),
    "value-NaN": raw_value("NaN"),
    "value-nan-lower": raw_value("nan"),
    "value-Infinity": raw_value("Infinity"),
    "value-neg-Infinity": raw_value("-Infinity"),
    "value-1e999": raw_value("1e999"),
    "value-20-digits": raw_value("18446744073709551616"),
    "value-string": raw_value('"12"'),
    "value-kJ": raw_value("4.184", "active_energy", "kJ"),
    "value-mi": raw_value("1", "distance", "mi"),
    "deep-nesting-70": event().replace('"type"', '"x":' + nest(70) + ',"type"'),
    "deep-nesting-63": event().replace('"type"', '"x":' + nest(62) + ',"type"'),
    "deep-nesting-in-sample": event().replace('"uuid"', '"x":' + nest(62) + ',"uuid"'),
    "deep-object-nesting": '{"a":' * 65 + "1" + "}" * 65,
    "invalid-utf8-user": event().replace('"ana"', '"an\udcff\udcc0"').encode("utf-8", "surrogateescape"),
    "invalid-utf8-uuid": event().replace('"u1"', '"u\udce2\udc82"').encode("utf-8", "surrogateescape"),
    "lone-surrogate-escape": event().replace('"u1"', '"u\\ud800x"'),
    "surrogate-pair-escape": event().replace('"ana"', '"\\ud83d\\ude00"'),
    "nul-escape": event().replace('"ana"', '"a\\u0000na"'),
    "bom": b"\xef\xbb\xbf" + event().encode(),
    "duplicate-type": event().replace('{"type":"sample-added"', '{"type":"sample-deleted","uuid":"u1","type":"sample-added"'),
    "duplicate-user": event().replace('"user":"ana"', '"user":"ana","user":"ben"'),
    "duplicate-value": event().replace('"value":1200', '"value":1200,"value":-1'),
    "duplicate-sample": event().replace('"user":"ana",', '"user":"ana","sample":{},'),
    "control-char-raw": event().replace('"ana"', '"a\x01na"'),
    "control-char-escaped": event().replace('"ana"', '"a\\u001fna\\t"'),
    "long-uuid": event(uuid="u" * 6000),
    "long-source": event(source="s" * 3000),
    "schema-1": event().replace('{"type"', '{"schema":1,"type"'),
    "schema-1.0e0": event().replace('{"type"', '{"schema":1.0e0,"type"'),
    "schema-2": event().replace('{"type"', '{"schema":2,"type"'),
    "schema-string": event().replace('{"type"', '{"schema":"1","type"'),
    "zone-etc": event(zone="Etc/GMT+5"),
    "zone-kolkata": event(zone="Asia/Kolkata"),
    "zone-lord-howe": event(zone="Australia/Lord_Howe", start="2024-04-06T23:00:00Z", end="2024-04-07T03:00:00Z"),
    "zone-bogus": event(zone="Europe/../../etc/passwd"),
    "zone-gmt-plus": event(zone="GMT+5"),
    "metric-unknown": event(metric="floors"),
    "unit-mismatch": event(unit="kcal"),
    "whitespace": " \t\r\n" + event().replace(",", " ,\r\n\t").replace(":", " : ") + " \n",
    "trailing-garbage": event() + "x",
    "truncated": event()[:-7],
    "deleted": '{"type":"sample-deleted","user":"ana","uuid":"u1"}',
    "deleted-empty-uuid": '{"type":"sample-deleted","user":"ana","uuid":""}',
    "type-unknown": '{"type":"sample-changed","user":"ana"}',
    "empty": "",
    "empty-object": "{}",
    "array": "[]",
    "null": "null",
    "add-delete-readd": "\n".join([event(), '{"type":"sample-deleted","user":"ana","uuid":"u1"}', event()]),
    "version-max": event().replace('"value":1200', '"value":1200,"version":9223372036854775807'),
    "version-over-max": event().replace('"value":1200', '"value":1200,"version":9223372036854775808'),
    "version-2-53-plus-1-escaped": event().replace('"ana"', '"an\\u0061"').replace('"value":1200', '"value":1200,"version":9007199254740993'),
    "version-fraction": event().replace('"value":1200', '"value":1200,"version":1.5'),
    "version-negative": event().replace('"value":1200', '"value":1200,"version":-1'),
    "version-stale-resend": "\n".join([event().replace('"value":1200', '"value":1200,"version":3'),
                                        event().replace('"value":1200', '"value":900,"version":2'),
                                        event(uuid="u2").replace('"value":1200', '"value":1200,"version":3')]),
    "overlap-phone-manual": "\n".join([event(), event(uuid="u2", source="phone", value=900),
                                       event(uuid="u3", source="manual", start="2024-03-30T23:00:00Z",
                                             end="2024-03-31T02:00:00Z", value=5)]),
    "overflow-sum": "\n".join([raw_value("1e308"), raw_value("1e308").replace('"u1"', '"u2"')
                               .replace("01:30:00+01:00", "01:00:00+01:00").replace('03:30:00+02:00', '01:30:00+01:00')]),
}

hostile_instants = {
    "plain": "2024-03-31T09:00:00+02:00",
    "frac": "2024-03-31T01:30:00.5+02:00",
    "frac-9": "2024-03-31T01:30:00.123456789Z",
    "frac-20": "2024-03-31T01:30:00.12345678901234567890Z",
    "lower": "2024-03-31t01:30:00z",
    "space": "2024-03-31 01:30:00-00:00",
    "year-0001": "0001-01-01T00:00:00Z",
    "year-0000": "0000-01-01T00:00:00Z",
    "year-9999": "9999-12-31T23:59:59.999999999Z",
    "year-1677": "1677-09-21T00:12:43.145224192Z",
    "year-1678": "1678-01-01T00:00:00+23:59",
    "year-2261": "2261-12-31T23:59:59.999999999-23:59",
    "year-2262": "2262-04-11T23:47:16.854775807Z",
    "offset-max": "2024-01-01T00:00:00+23:59",
    "offset-bad": "2024-01-01T00:00:00+24:00",
    "leap-second": "2016-12-31T23:59:60Z",
    "feb-29": "2000-02-29T12:00:00Z",
    "feb-29-1900": "1900-02-29T12:00:00Z",
    "month-13": "2024-13-01T00:00:00Z",
    "day-00": "2024-01-00T00:00:00Z",
    "no-zone": "2024-01-01T00:00:00",
    "date-only": "2024-03-31",
    "dot-no-digits": "2024-01-01T00:00:00.Z",
    "nul": "2024-01-01T00:00:00\x00Z",
    "bom": "\ufeff2024-01-01T00:00:00Z",
    "fullwidth-digits": "２０２４-01-01T00:00:00Z",
    "invalid-utf8": b"2024-01-01T00:00:00\xff",
    "signed-year": "+999-01-01",
    "empty": "",
}

config_seeds = {
    "daybook": open(os.path.join(ROOT, "config", "daybook.json"), encoding="utf-8").read(),
    "compose": open(os.path.join(ROOT, "config", "compose.json"), encoding="utf-8").read(),
    "empty-object": "{}",
    "empty": "",
    "priority-only": '{"priority":{"default":["b","a"],"heart_rate":["x"],"distance":[]}}',
    "priority-duplicate": '{"priority":{"default":["watch","watch"]}}',
    "priority-unknown-metric": '{"priority":{"floors":["watch"]}}',
    "priority-empty-name": '{"priority":{"default":[""]}}',
    "priority-not-object": '{"priority":["watch"]}',
    "priority-duplicate-key": '{"priority":{"default":["a"],"default":["b","a"]}}',
    "secret-in-file": '{"kafka":{"properties":{"sasl.password":"hunter2"}}}',
    "secret-env": '{"kafka":{"secrets":{"sasl.password":"DAYBOOK_KAFKA_PASSWORD","ssl.key.password":"DAYBOOK_KAFKA_PASSWORD"}}}',
    "secret-env-missing": '{"kafka":{"secrets":{"sasl.password":"NOT_SET"}}}',
    "secret-env-empty": '{"kafka":{"secrets":{"sasl.password":"EMPTY"}}}',
    "locked-override": '{"kafka":{"properties":{"enable.idempotence":"false","acks":1,"enable.auto.commit":true}}}',
    "integers": '{"kafka":{"producer":{"linger.ms":900000,"message.timeout.ms":2147483647,"batch.size":1e308,'
                '"queue.buffering.max.messages":-0},"consumer":{"session.timeout.ms":1000.5,"heartbeat.interval.ms":1e2}}}',
    "integers-nan": '{"kafka":{"producer":{"linger.ms":NaN}}}',
    "compression-unknown": '{"kafka":{"producer":{"compression":"brotli"}}}',
    "unknown-settings": '{"kafka":{"producer":{"acks":"all"},"consumer":{"auto.offset.reset":"latest"},"x":1}}',
    "properties-types": '{"kafka":{"properties":{"a":1e308,"b":-0,"c":false,"d":null,"e":[],"f":"\\u0000"}}}',
    "bootstrap-empty": '{"kafka":{"bootstrap.servers":"","client.id":"x"}}',
    "bom": "\ufeff" + '{"kafka":{"bootstrap.servers":"b:9092"}}',
    "deep-nesting": '{"x":' + nest(70) + "}",
    "invalid-utf8": b'{"kafka":{"client.id":"\xc3\x28"}}',
    "long-string": '{"kafka":{"client.id":"' + "c" * 4000 + '"}}',
}

LINE = week[0]
projector_seeds = {
    "ana-one": "ana\n" + LINE,
    "no-key": LINE,
    "empty-key": "\n" + LINE,
    "key-mismatch": "ben\n" + LINE,
    "key-invalid-utf8": b"an\xffa\n" + LINE.encode(),
    "batch-week": "ana\n" + "\n".join(l for l in week[0:13] if '"user":"ana"' in l),
    "caro-delete-readd": "caro\n" + "\n".join(week[844:848]),
    "poison-and-good": "ana\n{\"type\":\n" + LINE + "\nnot json\n" + json.dumps({"type": "sample-deleted", "user": "ana", "uuid": "ana-0325-w0-0"}),
    "overflow-sum": "ana\n" + hostile_events["overflow-sum"],
    "years-1700-2200": "ana\n" + hostile_events["years-1700-2200"],
    "nul-in-strings": "ana\n" + event().replace('"u1"', '"u\\u0000\\u0000"'),
    "empty": "",
}

# Request-targets as clients send them to `daybook serve`: the read routes, escapes of every
# kind, and what RequestTarget refuses.
request_target_seeds = {
    "totals": "/v1/users/ana/totals?metric=steps&from=2026-03-01&to=2026-03-31",
    "escaped-user": "/v1/users/ana%40x%2Fy/totals?metric=steps",
    "utf8-segment": "/v1/users/caf%C3%A9/totals",
    "plus-and-space": "/a+b?note=a+b%2Bc&flag&&",
    "empty-segments": "/v1//x/?=&&=",
    "root": "/",
    "syncs": "/v1/users/ben/syncs",
    "bad-escape": "/a%4",
    "bad-escape-query": "/x?%zz=1",
    "invalid-utf8-escape": "/%FF%FE",
    "nul-escape": "/x?q=a%00",
    "raw-invalid-utf8": b"/a\xff/b?c=\xc3",
    "asterisk": "*",
    "absolute-url": "http://x/y?z",
    "empty": "",
    "many-items": "/q?" + "&".join(f"k{i}=v%2{i % 10}" for i in range(40)),
}

for target, seeds in [
    ("event-decoder", {**week_seeds, **week_runs, **hostile_events}),
    ("instant", hostile_instants),
    ("configuration", config_seeds),
    ("projector", projector_seeds),
    ("request-target", request_target_seeds),
]:
    d = reset(target)
    for name, data in seeds.items():
        write(d, name, data)

total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(CORPUS) for f in fs)
count = sum(len(fs) for _, _, fs in os.walk(CORPUS))
print(f"{count} seeds, {total} bytes in {os.path.relpath(CORPUS)}")
