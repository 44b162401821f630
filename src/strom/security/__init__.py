"""Kafka's security model, the pure parts: principals, TLS settings, SASL mechanisms.

Nothing here touches sockets or the event loop; ``strom.server.network`` feeds these objects
the bytes and the peer certificate of each connection.
"""
