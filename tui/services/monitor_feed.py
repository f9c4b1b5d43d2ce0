"""What the console shows of a monitor running on the home, read from its status file only.

``hermes-admin monitor`` (``store.monitor``) writes ``<home>/hermes-admin-monitor.json`` when it
starts and stops, when an alert opens or closes and after each delivery; for ``--root`` it is the
root's own home. The console never talks to the monitor. A file whose monitor stopped or whose
pid is gone (``store.monitor.status.is_running`` false) shows nothing.

Every value of the file is outside input, even though the monitor wrote no secret in it: each
one is checked for its type here (a time is a finite number no calendar refuses, a count an
int), and what cannot be used is ``—``, or counted as a data error, never raised on. The texts
returned are raw: the screen passes each one through ``tui.text.shown.shown`` on its way out.
"""

from __future__ import annotations

import math
from typing import Any

from store.monitor import status
from store.paths import Home
from tui.text.format import NULL, clock_time, local_time
from tui.text.paths import tilde

ATTEMPTS_CAP = 1_000_000      # a delivery's attempts beyond this is not a count: shown as —
KIND_WORDS = {"firing": "alert", "resolved": "recovery"}
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
# What an 80-column window must show comes first: the fingerprint and the target (listed in
# the header) are last; the highlighted alert's title and text are in full below its table.
ALERT_COLUMNS = ("severity", "rule", "profile", "pool", "credential", "since", "title", "fingerprint")
DELIVERY_COLUMNS = ("time", "rule", "kind", "result", "attempts", "error", "target")


def live_status(home: Home) -> dict[str, Any] | None:
    """The status of the monitor running on *home*, else None (none ran, it stopped, pid gone)."""
    st = status.read(home)
    return st if status.is_running(st) else None


def text(value: Any) -> str:
    """A string from the file as a cell; ``—`` for anything that is not a non-empty string."""
    return value if isinstance(value, str) and value else NULL


def count(value: Any) -> str:
    """A count from the file (an int in bounds), else ``—``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= ATTEMPTS_CAP:
        return NULL
    return str(value)


def entries(st: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], int]:
    """The objects of the list *name*, and how many of its entries were not objects (a data
    error; a list that is not a list counts as one)."""
    value = st.get(name)
    if value is None:
        return [], 0
    if not isinstance(value, list):
        return [], 1
    good = [v for v in value if isinstance(v, dict)]
    return good, len(value) - len(good)


def alerts_word(n: int) -> str:
    return f"{n} alert" if n == 1 else f"{n} alerts"


def summary(st: dict[str, Any] | None) -> tuple[str, str]:
    """The status bar's part and its short form: ``monitor · 2 alerts, 1 critical`` and
    ``monitor · 2 alerts``; ``monitor · quiet`` with none open; ("", "") when no monitor runs."""
    if st is None:
        return "", ""
    alerts, bad = entries(st, "open_alerts")
    if bad:
        return "monitor · alerts unreadable", "monitor · ⚠"
    if not alerts:
        return "monitor · quiet", ""
    critical = sum(1 for a in alerts if a.get("severity") == "critical")
    short = f"monitor · {alerts_word(len(alerts))}"
    return (f"{short}, {critical} critical" if critical else short), short


def header_line(st: dict[str, Any], now: float) -> str:
    """Since when, on what (home or root, with its path), the pid."""
    mode = st.get("mode")
    what = mode if mode in ("home", "root") else NULL
    path = st.get("path")
    where = tilde(path) if isinstance(path, str) and path else NULL
    return (f"Monitor on {what} {where} · running since {local_time_of(st.get('started_at'), now)}"
            f" · pid {count(st.get('pid'))}")


def metrics_line(st: dict[str, Any]) -> str:
    metrics = st.get("metrics")
    return "metrics: " + ("off (--metrics none)" if metrics is None else text(metrics))


def rules_line(st: dict[str, Any]) -> str:
    """Where the rules came from: the rules file's path, or the built-in defaults."""
    rules = st.get("rules")
    return f"rules: {tilde(rules) if isinstance(rules, str) and rules else NULL}"


def targets_line(st: dict[str, Any]) -> str:
    """The delivery targets, in Apprise's privacy form as the monitor wrote them."""
    value = st.get("targets")
    if not isinstance(value, list):
        return f"targets: {NULL}"
    if not value:
        return "targets: none (alerts only on the metrics and in the audit log)"
    return "targets: " + ", ".join(text(t) for t in value)


def number(value: Any) -> float | None:
    """A finite number from the file, else None (a bool, a string, NaN, an int past any float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        got = float(value)
    except OverflowError:
        return None
    return got if math.isfinite(got) else None


def local_time_of(epoch: Any, now: float) -> str:
    """A time from the file: ``HH:MM:SS`` today, the date otherwise; ``—`` for no number."""
    got = number(epoch)
    return NULL if got is None else local_time(got, now)


def severity(value: Any) -> str:
    """The severity in words, with a symbol: colour is never the only signal."""
    marks = {"critical": "✖ critical", "warning": "⚠ warning", "info": "ℹ info"}
    return marks.get(value, text(value)) if isinstance(value, str) else NULL


def credential(a: dict[str, Any]) -> str:
    rid, label = a.get("id"), a.get("label")
    if isinstance(rid, str) and rid and isinstance(label, str) and label:
        return f"{rid} {label}"
    return text(rid) if isinstance(rid, str) and rid else text(label)


def open_alerts(st: dict[str, Any]) -> list[dict[str, Any]]:
    """The open alerts, most severe first, then oldest first."""
    alerts, _bad = entries(st, "open_alerts")

    def order(a: dict[str, Any]) -> tuple[int, float]:
        sev = a.get("severity")
        rank = SEVERITY_RANK.get(sev, 3) if isinstance(sev, str) else 3
        return rank, number(a.get("since")) or 0.0
    return sorted(alerts, key=order)


def alert_row(a: dict[str, Any], now: float) -> tuple[str, ...]:
    """One open alert's cells, in ALERT_COLUMNS' order."""
    return (severity(a.get("severity")), text(a.get("rule")), text(a.get("profile")), text(a.get("pool")),
            credential(a), local_time_of(a.get("since"), now), text(a.get("title")), text(a.get("fingerprint")))


def alert_line(a: dict[str, Any]) -> str:
    """The highlighted alert in full: its title and its text, as the notification said them."""
    return f"{text(a.get('title'))}: {text(a.get('text'))}"


def delivery_rows(st: dict[str, Any]) -> list[tuple[str, ...]]:
    """The last deliveries, newest first (the file keeps the newest last)."""
    got, _bad = entries(st, "last_deliveries")
    out = []
    for d in reversed(got):
        kind = d.get("kind")
        result = d.get("result")
        word = {"sent": "✓ sent", "failed": "✗ failed"}.get(result, text(result)) if isinstance(result, str) else NULL
        when = number(d.get("time"))
        out.append((NULL if when is None else clock_time(when), text(d.get("rule")),
                    KIND_WORDS.get(kind, text(kind)) if isinstance(kind, str) else NULL,
                    word, count(d.get("attempts")), text(d.get("error")) if d.get("error") is not None else "",
                    text(d.get("target"))))
    return out


def data_errors(st: dict[str, Any]) -> list[str]:
    """One line per list of the file with entries that are not objects."""
    out = []
    for name, what in (("open_alerts", "open alert"), ("last_deliveries", "delivery")):
        _good, bad = entries(st, name)
        if bad:
            out.append(f"⚠ data error: {bad} {what} entr{'y' if bad == 1 else 'ies'} of the status file "
                       "could not be read")
    return out
