"""`make cli`: the fabric in Mininet with its SyncMesh daemons, and Mininet's CLI to poke around.

Everything is as in `make run` (softswitch nodes, shaped links, daemons
programming the switches over P4Runtime) but without traffic or faults: try
``h1 ping -I 10.0.1.10 10.0.3.10``, ``link l1 s1 down`` / ``up`` (every link
between the two nodes), ``h1 ip rule``, or the switch logs in the run folder.
Leaving the CLI (``exit`` or Ctrl-D) stops daemons and switches and removes the
interfaces this run created.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from fabricmodel import FabricError, load
from topologies.demo import DEFAULT_FABRIC, PROGRAM, REPO, log_to_file


def main(argv: list[str] | None = None) -> int:
    """Command line of `make cli`."""
    p = argparse.ArgumentParser(prog="python -m topologies.cli", description=__doc__.split("\n")[0])
    p.add_argument("--fabric", type=Path, default=DEFAULT_FABRIC)
    p.add_argument("--ecmp", action="store_true", help="leaves in ECMP mode")
    p.add_argument("--out", type=Path, default=REPO / "out")
    args = p.parse_args(argv)
    try:
        fabric = load(args.fabric)
    except (FabricError, OSError) as e:
        print(f"topologies.cli: error: {e}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("topologies.cli: error: Mininet needs root", file=sys.stderr)
        return 2
    from mininet.cli import CLI

    from topologies.control import ControlOptions, FabricControl
    from topologies.mininet_fabric import FabricNet, NetOptions

    run_dir = args.out / time.strftime("cli-%Y%m%d-%H%M%S")
    log_to_file(run_dir / "syncmesh.log")
    fnet = FabricNet(fabric, NetOptions(log_dir=run_dir / "logs"))
    control = None
    try:
        fnet.start()
        control = FabricControl(fnet.fabric, PROGRAM, ControlOptions(glb=not args.ecmp),
                                work_dir=run_dir)
        control.start()
        control.wait_programmed()
        print(f"fabric {fabric.name} is up; logs in {run_dir}")
        for host in fabric.hosts:
            nics = ", ".join(f"{fnet.nic_intf(host.name, n)} {n.ip} (leaf {n.leaf})"
                             for n in host.nics)
            print(f"  {host.name}: {nics}")
        for sw in fnet.fabric.switches:
            print(f"  {sw.name}: {sw.role.value}, P4Runtime {sw.p4runtime}, SyncMesh {sw.syncmesh}, "
                  f"metrics http://{sw.metrics}/metrics")
        print("try: h1 ping -c3 -I <h1 address> <address of a host in another pod>; "
              "link l1 s1 down")
        CLI(fnet.net)
    except KeyboardInterrupt:
        pass
    finally:
        if control is not None:
            control.stop()
        fnet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
