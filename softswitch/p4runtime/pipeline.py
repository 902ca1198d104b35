"""A forwarding pipeline: the program, its P4Info index, the engine and controller state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from finsy.proto import p4i, p4r

from softswitch.p4runtime.digests import DigestBatcher
from softswitch.p4runtime.errors import from_switch_error
from softswitch.p4runtime.schema import Schema

if TYPE_CHECKING:
    from softswitch.engine import Switch
    from softswitch.frontend import Program


@dataclass
class Pipeline:
    """A committed or saved forwarding pipeline."""

    p4info: p4i.P4Info
    device_config: bytes
    cookie: int | None
    program: Program
    schema: Schema
    switch: Switch
    # Controller metadata and meter configs kept for read-back, keyed by (table id, handle).
    entry_metadata: dict[tuple[int, int], bytes] = field(default_factory=dict)
    direct_meter_cfg: dict[tuple[int, int], p4r.MeterConfig] = field(default_factory=dict)
    meter_cfg: dict[tuple[int, int], p4r.MeterConfig] = field(default_factory=dict)
    members: dict[int, dict[int, p4r.ActionProfileMember]] = field(default_factory=dict)
    groups: dict[int, dict[int, p4r.ActionProfileGroup]] = field(default_factory=dict)
    mc_groups: dict[int, p4r.MulticastGroupEntry] = field(default_factory=dict)
    clone_sessions: dict[int, p4r.CloneSessionEntry] = field(default_factory=dict)
    digest_entries: dict[int, p4r.DigestEntry] = field(default_factory=dict)
    digests: DigestBatcher = field(default_factory=DigestBatcher)
    # entry_plans.TablePlan (or None) per table id, built on first use
    table_plans: dict[int, Any] = field(default_factory=dict)


def switch_call(fn: Callable, *args, **kwargs):
    """Call the engine and turn its SwitchError into the P4Runtime status."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        from softswitch.engine import SwitchError  # here: this runs for every update

        if isinstance(exc, SwitchError):
            raise from_switch_error(exc) from exc
        raise


def copy_msg(msg):
    """A copy of a protobuf message (stored state never aliases a request)."""
    out = type(msg)()
    out.CopyFrom(msg)
    return out
