import MeshCore
import MeshLocalAPI
import NIOCore

/// Performs checked control requests against a `MeshControlPlane` and shapes the replies.
///
/// A value type with no I/O of its own: the connection handler hands it each request through
/// `start` (LocalAPIDispatcher+Start.swift) and writes the reply it gets back.
public struct LocalAPIDispatcher: Sendable {
    /// What every reply is built against.
    public let controlPlane: any MeshControlPlane
    /// Lifetime of a pairing code when the request does not name one, in seconds.
    public let defaultPairingLifetime: Double
    /// Largest request body accepted (reported by `hello`).
    public let maximumBodyLength: Int
    /// Release version reported by `hello`.
    public let daemonVersion: String
    /// Local API counters merged into the `status` reply's counters, if given.
    public let counters: LocalAPICounters?
    /// The delivery router serving the data operations; without it they fail with
    /// `delivery-unavailable`.
    public let router: DeliveryRouter?
    /// Who may use which feature in data operations; nil = everyone who can open the socket.
    public let featureAllowList: FeatureAllowList?
    /// Who may pair and unpair (the control role).
    public let controlRole: ControlRole
    /// The `hello` reply without its `uid`, encoded once (see `helloBody(uid:)`).
    private let helloWithoutUID: [UInt8]
    /// The tasks performing requests (`start`), awaited when the server shuts down.
    let requestTasks = LocalAPIRequestTasks()
    /// The `ping` requests running per uid, capped (LocalAPIDispatcher+Ping.swift).
    let pingSlots: LocalAPIPingSlots

    /// Creates a dispatcher.
    public init(controlPlane: any MeshControlPlane, defaultPairingLifetime: Double,
                maximumBodyLength: Int = LocalAPIWireFormat.defaultMaximumBodyLength,
                daemonVersion: String = LocalAPIDispatcher.currentDaemonVersion,
                counters: LocalAPICounters? = nil, router: DeliveryRouter? = nil,
                featureAllowList: FeatureAllowList? = nil, controlRole: ControlRole = ControlRole(),
                maximumPingsPerUID: Int = LocalAPIDispatcher.defaultMaximumPingsPerUID) {
        self.controlRole = controlRole
        self.pingSlots = LocalAPIPingSlots(maximumPerUID: maximumPingsPerUID)
        self.counters = counters
        self.router = router
        self.featureAllowList = featureAllowList
        self.controlPlane = controlPlane
        self.defaultPairingLifetime = defaultPairingLifetime
        self.maximumBodyLength = maximumBodyLength
        self.daemonVersion = daemonVersion
        let hello = HelloReply(protocolVersion: Int(LocalAPIWireFormat.version), daemon: "meshd",
                               daemonVersion: daemonVersion, maximumBodyLength: maximumBodyLength,
                               operations: LocalAPIOperation.controlOperations.map(\.name)
                                   + (router == nil ? [] : LocalAPIOperation.dataOperations.map(\.name)),
                               uid: nil)
        helloWithoutUID = (try? LocalAPIJSON.encode(hello)).map { Array($0.readableBytesView) } ?? Array("{}".utf8)
    }

    /// The `hello` reply body: the same bytes `LocalAPIJSON.encode(HelloReply(…))` gives, built
    /// from the reply encoded once at start. `uid` is the last of the sorted keys, so it is
    /// spliced in before the closing brace; JSONEncoder took ≈ 135 000 instructions per hello,
    /// paid by every connection (each `meshctl` call, each app start).
    func helloBody(uid: UInt32?) -> ByteBuffer {
        guard let uid, helloWithoutUID.count > 2, helloWithoutUID.last == UInt8(ascii: "}") else {
            return ByteBuffer(bytes: helloWithoutUID)
        }
        var body = ByteBuffer()
        body.reserveCapacity(helloWithoutUID.count + 20)
        body.writeBytes(helloWithoutUID.dropLast())
        body.writeString(",\"uid\":\(uid)}")
        return body
    }

    /// The version `hello` reports unless told otherwise: this build's.
    public static let currentDaemonVersion = SessionMeshVersion.current

    /// Performs `request`; returns the JSON reply body or the error to send.
    ///
    /// A failure becomes the body `LocalAPIErrorBody(failure:)` gives (LocalAPIErrorMapping.swift):
    /// a `MeshError` its documented code and message, any unknown error `internal`.
    public func perform(_ request: LocalAPIRequest, credentials: PeerCredentials?) async -> Result<ByteBuffer, LocalAPIErrorBody> {
        await perform(request, context: LocalAPIRequestContext(credentials: credentials))
    }

    /// As `perform(_:credentials:)`, for a request of a connection (`attach` needs it).
    func perform(_ request: LocalAPIRequest, context: LocalAPIRequestContext) async -> Result<ByteBuffer, LocalAPIErrorBody> {
        do {
            if let reply = try await dataReply(to: request, context: context) {
                return .success(reply)
            }
            return .success(try await reply(to: request, credentials: context.credentials))
        } catch {
            return .failure(LocalAPIErrorBody(failure: error))
        }
    }

    private func reply(to request: LocalAPIRequest, credentials: PeerCredentials?) async throws -> ByteBuffer {
        if let operation = request.controlRoleOperation {
            try controlRole.check(operation, credentials: credentials)
        }
        switch request {
        case .hello:
            return helloBody(uid: credentials?.uid)
        case .status:
            var status = await controlPlane.status()
            if let counters {
                status.counters.merge(counters.snapshot()) { node, _ in node }
            }
            if let router {
                status.counters.merge(await router.counterValues()) { node, _ in node }
            }
            return try LocalAPIJSON.encode(status)
        case .peers:
            return try LocalAPIJSON.encode(PeersReply(peers: await controlPlane.peers()))
        case .pairCreate(let validFor, let replace, let single):
            return try LocalAPIJSON.encode(try await controlPlane.createPairingCode(validFor: validFor ?? defaultPairingLifetime,
                                                                                    replace: replace, single: single))
        case .pairWait(let code):
            return try LocalAPIJSON.encode(try await controlPlane.awaitPairing(code: code))
        case .pairCancel(let code):
            await controlPlane.cancelPairing(code: code)
            return try LocalAPIJSON.encode(EmptyBody())
        case .pairJoin(let code, let address, let replace, let single):
            return try LocalAPIJSON.encode(try await controlPlane.joinPairing(code: code, address: address, replace: replace,
                                                                              single: single))
        case .unpair(let deviceID):
            try await controlPlane.unpair(deviceID: deviceID)
            return try LocalAPIJSON.encode(EmptyBody())
        case .ping(let deviceID, let count):
            return try await ping(deviceID: deviceID, count: count, credentials: credentials)
        default:
            throw MeshError.deliveryUnavailable
        }
    }
}
