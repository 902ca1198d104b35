"""fabricmodel: the fabric description every layer reads (model, loader, generator).

The bottom of the project: the SyncMesh daemon, the simulator and the Mininet
testbed all import it, and it imports none of them. Fabric files live in
``topologies/fabrics/`` (examples used by ``make run``, the docs and tests).
"""

from .generate import leaf_spine
from .loader import dump, format_capacity, from_dict, load, parse, parse_capacity, to_dict
from .model import (
    MAX_PORT,
    Control,
    Endpoint,
    Fabric,
    FabricError,
    Host,
    Link,
    Nic,
    PortInfo,
    Role,
    Switch,
    check_fabric,
    with_addresses,
)

__all__ = [
    "MAX_PORT", "Control", "Endpoint", "Fabric", "FabricError", "Host", "Link", "Nic",
    "PortInfo", "Role", "Switch", "check_fabric", "dump", "format_capacity", "from_dict",
    "leaf_spine", "load", "parse", "parse_capacity", "to_dict", "with_addresses",
]
