"""Import Mininet without letting it take over Python logging.

`mininet.log` makes `MininetLogger` the class of every logger created after
it is imported: such a logger has its own stderr handler and the level
OUTPUT (above INFO), so INFO records of the project's loggers (SyncMesh,
softswitch, finsy) created later would vanish. Mininet's own logger is
created at import time and keeps its class; ours get the standard one back.
Import Mininet modules after this one.
"""

import logging

import mininet.log  # noqa: F401  (sets the logger class as a side effect)

logging.setLoggerClass(logging.Logger)
