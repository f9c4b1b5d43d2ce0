"""Secrets leave hermes-admin only as fingerprints: the one redaction boundary.

``fingerprints`` (``sk-or-…a1B2``), ``secret_ids`` (which rows share a secret, by a hash
kept in memory) and ``redact`` (the redactor every output passes: the home's secrets,
key shapes, URL userinfo). Imports the store core and ``config``'s YAML guard.
"""
