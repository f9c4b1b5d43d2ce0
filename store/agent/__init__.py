"""What an agent process does with a pool, on the same locked store as the console.

``runtime`` (an agent: its primary, the fallback chain, the restore gate), ``pool_client``
(select, lease, report), ``outcomes`` (a request's result and whose fault it is),
``refresh`` (OAuth renewal), ``probe`` and ``verdicts`` (reopen probes and their cache).
No network call under the lock. Imports the store core, ``pools``, ``redaction`` and
``config``.
"""
