"""Secrets leave hermes-admin only as fingerprints: the one redaction boundary.

``fingerprints`` (``sk-or-…a1B2``), ``secret_ids`` (which rows share a secret, by a hash
kept in memory), ``walk`` (which fields of a store, a config and an environment hold a
secret), ``urls`` (a URL's password, shown as ``***``), ``shapes`` (what a key looks like: the
provider-prefixed patterns), ``redact`` (the redactor every output
passes: the home's secrets, key shapes, URL userinfo) and ``crash`` (every traceback
hermes-admin prints, through the redactor, never with locals). Imports only the store core
(its ``yamlguard`` and ``envfile`` among it).
"""
