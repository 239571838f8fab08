import MeshDaemon
import NIOCore

/// Which kind of path a message takes on the simulated network.
///
/// Each kind has its own delivery rules (`SimulatedNetwork`): a datagram is delayed, lost,
/// duplicated and reordered per the link's quality; a stream frame keeps its order on its
/// connection and is retransmitted while the link is cut. A relay path (messages through a
/// broker that drops, delays, duplicates and replays them) is a third kind with its own rules
/// and its own events, next to these two.
public enum NetworkPath: Sendable, Equatable {
    case datagram
    case stream
}

/// What arrives on a stream connection's end: a frame in order, or the end of the stream.
public enum StreamArrival: Sendable, Equatable {
    /// The connecting side's preamble (the accepting end only, first).
    case preamble(ConnectionKind)
    /// One frame body.
    case frame([UInt8])
    /// The other end closed (its process ended, or it closed the connection).
    case end
}

/// Something the network hands to a node's transport.
public enum NetworkEvent: Sendable, Equatable {
    /// A datagram arrived at node `to`, sent from `source` (the sender's address when it sent).
    case datagram(to: Int, source: SocketAddress, bytes: [UInt8])
    /// A connection from another node reached node `to`'s listener.
    case accepted(to: Int, connection: UInt64, remote: SocketAddress)
    /// Node `to`'s dial `attempt` ended: the connection, or nil with why it failed.
    case dialed(to: Int, attempt: UInt64, connection: UInt64?, failure: String?)
    /// Something arrived at node `to`'s end of `connection`.
    case stream(to: Int, connection: UInt64, arrival: StreamArrival)

    /// The node the event is for.
    public var node: Int {
        switch self {
        case .datagram(let to, _, _), .accepted(let to, _, _), .dialed(let to, _, _, _), .stream(let to, _, _): to
        }
    }
}
