@testable import MeshDaemon

/// The daemon reads datagrams where NIO received them; tests hold theirs in arrays.
extension DatagramHeader {
    init?(parsing datagram: [UInt8]) {
        guard let header = datagram.withUnsafeBytes({ Self(parsing: $0) }) else { return nil }
        self = header
    }
}

extension ActiveChannel {
    mutating func openDatagram(_ datagram: [UInt8], index: UInt32) throws -> ChannelMessage {
        try datagram.withUnsafeBytes { try openDatagram($0, index: index) }
    }
}
