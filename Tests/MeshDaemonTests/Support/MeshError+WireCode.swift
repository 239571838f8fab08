@testable import MeshDaemon
import MeshLocalAPI

extension MeshError {
    /// The local API code a client sees for this error, through the daemon's one mapping
    /// (`LocalAPIErrorBody(_:)`): tests assert the documented codes, not the kinds.
    var code: String { LocalAPIErrorBody(self).code }
}
