#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Why binding the listen address failed, in words a person can act on.
///
/// NIO's own text ("bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)") is what
/// a new user met first when port 47470 was taken (a second daemon with another state folder).
enum ListenFailure {
    /// The reason, with what to do for the common cases; `transport` ("TCP", "UDP") is named
    /// only for the others.
    static func describe(_ error: any Error, transport: String) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case EADDRINUSE:
                return "the port is in use (another meshd, or another program); stop that, or give this daemon another --listen HOST:PORT"
            case EADDRNOTAVAIL:
                return "no network interface of this machine has that address; listen on one of its addresses, 0.0.0.0 or [::]"
            case EACCES:
                return "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE); choose a port from 1024"
            default:
                break
            }
        }
        if let unknown = error as? SocketAddressError.UnknownHost {
            return "'\(unknown.host)' is not an address of this machine and does not resolve as a host name (\(unknown.errorDescription))"
        }
        return "\(transport): \(error)"
    }
}
