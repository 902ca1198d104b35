"""Generated protobuf module of syncmesh.proto (see the regeneration command in it)."""
