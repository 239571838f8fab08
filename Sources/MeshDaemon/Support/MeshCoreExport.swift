// MeshDaemon's public API speaks MeshCore's values (`MeshError`, the control reports,
// `DeviceID`): importers of MeshDaemon see them without importing MeshCore themselves.
@_exported import MeshCore
