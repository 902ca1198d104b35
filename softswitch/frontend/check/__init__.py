"""The checker's passes, one module per part of the language (see docs/softswitch-frontend.md).

`softswitch.frontend.checker.Checker` combines them; `base.CheckerBase`
holds the shared state and declares what one pass may call in another.
"""
