// The values the local API carries that the daemon's core defines (control reports, delivery
// vocabulary, device IDs, `EventLoopTaskExecutor`) live in MeshCore. Clients that import
// MeshLocalAPI see them without importing MeshCore themselves.
@_exported import MeshCore
