"""Fleet: hosts that share keys share their cooldowns through Redis/Valkey.

Imports the store core, ``store.outside``, ``ops``, ``pools``, ``redaction``, ``config``,
``watch`` and redis-py; never Textual, ``tui`` or ``screens``. Redis is outside data:
what comes in passes one checked reader, what goes out one redaction.

- ``keys``: the fleet secret, fleet fingerprints (HMAC), host names, safe Redis URLs;
- ``model``: plain values (FleetState, HostInfo, KeyInfo, FleetSnapshot), no parsing;
- ``inbound``: every value read from Redis, checked (``store.outside``); a pub/sub
  message is only a hint naming a key; ``notices``: how a bad value is said and counted;
- ``outbound``: every text sent, the home's secrets as fleet fingerprints;
- ``client``: ``connect(url)``, ``FleetClient`` (the Lua rules in ``rules.lua``,
  heartbeats, checked ``states`` and ``snapshot``);
- ``channel``: ``follow_channel``, the one resubscribe loop (sync daemon, console feed);
- ``local``: pure functions from a document to fleet rows and back; ``applier``: the
  daemon's one write path to auth.json; ``sync``: the daemon; ``state_file``: its state;
- ``api``: fleet-wide bench and reset, ``local_keys(home, secret)`` to label the view.
"""
