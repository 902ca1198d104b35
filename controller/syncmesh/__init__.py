"""SyncMesh: the per-switch daemon that shares congestion profiles and link notices.

``syncmesh.core`` holds the I/O-free decision logic (driven by an explicit
clock); ``syncmesh.daemon`` wires it to gRPC peers, the switch driver, the
metrics endpoint and the logs.
"""
