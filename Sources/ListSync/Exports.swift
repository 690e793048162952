// The transport the protocol's messages travel over: `Transport`, `TransportError` and the
// in-memory transport live in the dependency-free `ListSyncTransport` below the protocol, so that
// the sockets, HTTP, NATS and the fault proxy build on them without the engine. Who imports the
// protocol sees them too.
@_exported import ListSyncTransport
