"""What every switch target of the project provides, at the bottom of the layers.

* ``switchtarget.port_status``: the port-status frame, how a target tells a P4
  program that a port lost or regained carrier.
* ``switchtarget.pipeline``: the pipeline interface (``PipelineBuilder``):
  compiling a program into its P4Info and the target's device config; each
  target package provides one (``softswitch.target``, ``bmv2.target``,
  ``sglb.tofino_target``) and a controller loads the one it is told to by name
  (``load_builder``), so it imports none of them.

Imports nothing of the project, so every layer may import it.
"""
