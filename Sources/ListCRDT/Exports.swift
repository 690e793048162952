// A document's identity is defined below the engine (ListSyncIdentity), so that the transport and
// the handshake, which name documents in a device's claims, do not depend on the engine; every
// user of the engine keeps seeing it here.
@_exported import ListSyncIdentity
