#!/usr/bin/env python3
"""Writes examples/week.jsonl: a realistic, repeatable week of events for three users.

- ana (Europe/Berlin): iPhone and Apple Watch record the same walks; a manual entry
  overlaps them; the week spans the 2024-03-31 spring-forward weekend (a 23-hour Sunday).
- ben (Europe/Berlin -> America/New_York): flies to New York on 2024-03-28 and his
  samples change zone mid-day.
- caro (America/Santiago): a watch sample runs across midnight; one sample is edited
  and one is deleted (then re-sent by a retrying uploader, which must not resurrect it).
Run: python3 examples/generate.py > examples/week.jsonl
"""
import json, random
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

rng = random.Random(7)
out = []

def ev(user, uuid, metric, source, start, end, value, unit, zone):
    out.append({"type": "sample-added", "user": user, "sample": {
        "uuid": uuid, "metric": metric, "source": source,
        "start": start.isoformat(), "end": end.isoformat(),
        "value": value, "unit": unit, "zone": zone}})

def day_of_walks(user, zone, day, n, tag):
    tz = ZoneInfo(zone)
    for k in range(n):
        start = datetime(day.year, day.month, day.day, 7 + 2 * k, rng.randrange(0, 50), tzinfo=tz)
        minutes = rng.randrange(20, 50)
        end = start + timedelta(minutes=minutes)
        steps = minutes * rng.randrange(90, 120)
        # The watch splits a walk into 5-minute samples; the phone records it whole, a bit longer.
        t = start
        i = 0
        while t < end:
            e = min(end, t + timedelta(minutes=5))
            share = round(steps * (e - t) / (end - start))
            ev(user, f"{tag}-w{k}-{i}", "steps", "watch", t, e, share, "count", zone)
            ev(user, f"{tag}-we{k}-{i}", "active_energy", "watch", t, e, round(share * 0.04, 2), "kcal", zone)
            t = e
            i += 1
        ps = start - timedelta(minutes=3)
        pe = end + timedelta(minutes=4)
        ev(user, f"{tag}-p{k}", "steps", "phone", ps, pe, round(steps * 1.08), "count", zone)
        ev(user, f"{tag}-pd{k}", "distance", "phone", ps, pe, round(steps * 0.00075, 3), "km", zone)
        ev(user, f"{tag}-hr{k}", "heart_rate", "watch", start + timedelta(minutes=10), start + timedelta(minutes=10),
           rng.randrange(95, 140), "count/min", zone)
    rest = datetime(day.year, day.month, day.day, 6, 30, tzinfo=tz)
    ev(user, f"{tag}-hr-rest", "heart_rate", "watch", rest, rest, rng.randrange(52, 64), "count/min", zone)

first = datetime(2024, 3, 25)
for d in range(7):
    day = first + timedelta(days=d)
    day_of_walks("ana", "Europe/Berlin", day, 3, f"ana-{day:%m%d}")
    ben_zone = "Europe/Berlin" if d < 3 else "America/New_York"
    day_of_walks("ben", ben_zone, day, 2, f"ben-{day:%m%d}")
    day_of_walks("caro", "America/Santiago", day, 2, f"caro-{day:%m%d}")

berlin = ZoneInfo("Europe/Berlin")
# ana types in a 4,000-step hike on the DST Sunday that the watch and phone also saw in part.
ev("ana", "ana-manual-hike", "steps", "manual",
   datetime(2024, 3, 31, 1, 0, tzinfo=berlin), datetime(2024, 3, 31, 4, 0, tzinfo=berlin), 4000, "count", "Europe/Berlin")
# ben, on the day he flies: a phone sample still on Berlin time overlaps a New York watch sample.
ny = ZoneInfo("America/New_York")
ev("ben", "ben-flight-walk", "steps", "watch",
   datetime(2024, 3, 28, 19, 0, tzinfo=ny), datetime(2024, 3, 28, 19, 40, tzinfo=ny), 2400, "count", "America/New_York")
ev("ben", "ben-flight-phone", "steps", "phone",
   datetime(2024, 3, 29, 0, 20, tzinfo=berlin), datetime(2024, 3, 29, 1, 20, tzinfo=berlin), 3000, "count", "Europe/Berlin")
# caro: a night walk across midnight, an edit, a deletion and a retried upload of it.
scl = ZoneInfo("America/Santiago")
ev("caro", "caro-night", "steps", "watch",
   datetime(2024, 3, 27, 23, 30, tzinfo=scl), datetime(2024, 3, 28, 0, 30, tzinfo=scl), 3600, "count", "America/Santiago")
ev("caro", "caro-night", "steps", "watch",
   datetime(2024, 3, 27, 23, 30, tzinfo=scl), datetime(2024, 3, 28, 0, 30, tzinfo=scl), 3000, "count", "America/Santiago")
ev("caro", "caro-typo", "steps", "manual",
   datetime(2024, 3, 29, 12, 0, tzinfo=scl), datetime(2024, 3, 29, 13, 0, tzinfo=scl), 90000, "count", "America/Santiago")
out.append({"type": "sample-deleted", "user": "caro", "uuid": "caro-typo"})
out.append(dict(out[-2]))

for e in out:
    print(json.dumps(e, separators=(",", ":")))
