"""Numbers and durations of the configuration, as PromQL and as words in alert texts."""

import re

UNIT_WORDS = {"ms": "millisecond", "s": "second", "m": "minute", "h": "hour", "d": "day",
              "w": "week", "y": "year"}


def number(x):
    """A threshold as PromQL writes it: 0.9, 600, 0.05."""
    return f"{x:g}"


def percent(ratio):
    return f"{ratio * 100:g}%"


def seconds_text(s):
    """0.05 → 50ms, 2 → 2s (as Prometheus' humanizeDuration writes them)."""
    return f"{s * 1000:g}ms" if s < 1 else f"{s:g}s"


def duration_text(d):
    """5m → 5 minutes, 1h → 1 hour; a compound duration (1h30m) stays as written."""
    m = re.fullmatch(r"(\d+)(ms|[smhdwy])", d)
    if not m:
        return d
    n, unit = int(m.group(1)), UNIT_WORDS[m.group(2)]
    return f"{n} {unit}{'' if n == 1 else 's'}"
