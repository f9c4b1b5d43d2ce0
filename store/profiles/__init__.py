"""A root of Hermes homes: the profiles, acting on all of them, and what is found across them.

``root`` (discovery and per-profile homes; how Hermes names a profile is the core's
``paths``), ``live`` (every profile of a root under one watch, on ``watch``'s loop),
``everywhere`` (one key acted on in every profile that holds it), ``inventory`` (each
profile read once) and ``findings`` (copied grants, shared keys, ...). Imports the store
core, ``ops``, ``watch``, ``config``, ``pools`` and ``redaction``.
"""
