"""Structured logs: one logfmt line per event, the switch name on every line."""

from __future__ import annotations

import logging
import time
from typing import Any

_RESERVED = ("ts", "level", "switch", "event")


def _quote(value: Any) -> str:
    text = str(value)
    if text == "" or any(c in text for c in ' ="\\\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


class LogfmtFormatter(logging.Formatter):
    """``ts=... level=info switch=l1 event=peer_up peer=s1``: greppable and machine-readable."""

    def __init__(self, default_switch: str = "-"):
        super().__init__()
        self.default_switch = default_switch

    def format(self, record: logging.LogRecord) -> str:
        """One line: time, level, switch, event, then the event's fields."""
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [f"ts={ts}.{int(record.msecs):03d}Z", f"level={record.levelname.lower()}",
                 f"switch={_quote(getattr(record, 'switch', self.default_switch))}",
                 f"event={_quote(getattr(record, 'event', 'log'))}"]
        fields = getattr(record, "fields", None) or {}
        parts += [f"{k}={_quote(v)}" for k, v in fields.items() if k not in _RESERVED]
        if not getattr(record, "event", None):
            parts.append(f"msg={_quote(record.getMessage())}")
            parts.append(f"logger={record.name}")
        if record.exc_info:
            parts.append(f"error={_quote(self.formatException(record.exc_info))}")
        return " ".join(parts)


class SwitchLog:
    """Logs events of one switch's daemon."""

    def __init__(self, switch: str, logger: logging.Logger | None = None):
        self.switch = switch
        self.logger = logger or logging.getLogger(f"syncmesh.{switch}")

    def event(self, event: str, level: int = logging.INFO, **fields: Any) -> None:
        """One structured line: the event name and its fields."""
        if self.logger.isEnabledFor(level):
            self.logger.log(level, event, extra={"switch": self.switch, "event": event,
                                                 "fields": fields})


def setup(switch: str, level: int = logging.INFO) -> None:
    """Route every log record of the process to stderr in logfmt, tagged with ``switch``."""
    handler = logging.StreamHandler()
    handler.setFormatter(LogfmtFormatter(default_switch=switch))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
