"""The SGLB program mapping of a switch, chosen by its target.

``mapping_for(identity)`` gives p4src/sglb.p4's mapping on v1model and
p4src/tna/sglb.p4's on Tofino and Tofino 2; both turn the core's desired state
into entities directly (``syncmesh.sglb_switch.ProgramMapping``). With
``syncmesh.p4runtime_entities`` that is the whole way from a desired state to
P4Runtime updates, without a switch connection.
"""

from __future__ import annotations

from sglb.settings import SwitchTarget

from .sglb_mapping import V1ModelMapping
from .sglb_switch import Identity, ProgramMapping
from .sglb_tna_mapping import TnaMapping

MAPPINGS: dict[SwitchTarget, type[V1ModelMapping] | type[TnaMapping]] = {
    SwitchTarget.V1MODEL: V1ModelMapping,
    SwitchTarget.TOFINO: TnaMapping,
    SwitchTarget.TOFINO2: TnaMapping,
}


def mapping_for(identity: Identity) -> ProgramMapping:
    """The mapping of the program ``identity.target`` runs."""
    return MAPPINGS[identity.target](identity)
