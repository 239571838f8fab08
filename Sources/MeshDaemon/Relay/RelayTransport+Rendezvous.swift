import MeshCore
import MeshMQTT
import NIOCore

/// Pairing through the broker (docs/PAIRING.md, "Pairing through the relay broker"): the
/// rendezvous topics of a code's public hint (`RelayRendezvousTopics`), carrying pairing paths
/// exactly as a TCP kind=2 connection carries them.
///
/// - **Inviter.** While a code is live the node names its hint (`invite(hint:)`); the transport
///   subscribes to the joiner-to-inviter topics of today and yesterday, and a new path ID there
///   is served as an accepted connection (the node's gate and `PairingInviterExchange`, the same
///   attempt counting: every relay path has the source key `relay:HOST`). All of one code's
///   topics feed ONE receiver, and a path ID is opened once, so a message the broker hands over
///   twice (on both subscriptions, or again after a reconnect) never starts a second attempt.
/// - **Joiner.** A dial to `.rendezvous(hint)` subscribes to the inviter-to-joiner topics, waits
///   until the broker confirmed them (SUBACK, at most ``subscribeTimeout``) so the inviter's
///   answer cannot be missed, then opens a path with a fresh random ID on today's
///   joiner-to-inviter topic. The subscriptions end with the last such path.
///
/// Paths of a joiner's rendezvous that this device did not dial are ignored; a rendezvous never
/// carries datagrams or mailbox boxes.
extension RelayTransport {
    /// How long a joiner waits for the broker to confirm its rendezvous subscriptions.
    static let subscribeTimeout = TimeAmount.seconds(3)

    /// One rendezvous this device listens on.
    struct Rendezvous {
        var topics: RelayRendezvousTopics
        var receiver = RelayReceiver()
        var subscribed: [String] = []
        /// Joiner: paths dialled on it and still open (the subscriptions end with the last).
        var dials = 0
    }

    /// A dial waiting for its subscriptions to be confirmed.
    struct SubscriptionWaiter {
        var id: UInt64
        var topics: [String]
        var promise: EventLoopPromise<Bool>
    }

    // MARK: - Inviter

    /// The live code's public hint while this device shows a code (nil: none): subscribes to
    /// its rendezvous, or ends the previous one. Paths of an ended rendezvous run on until their
    /// attempt ends (their answers need no subscription, and their code decides).
    func invite(hint: String?) {
        guard let loop else {
            invitingHint = hint
            return
        }
        loop.preconditionInEventLoop()
        guard hint != invitingHint else { return }
        if let old = invitingHint { leave(.rendezvous(hint: old, inviting: true)) }
        invitingHint = hint
        refreshRendezvous()
    }

    /// Follows the live code and the UTC day: the inviter's subscriptions for today and
    /// yesterday, and the joiners' likewise.
    func refreshRendezvous() {
        guard let prefix = try? RelayTopicPrefix(relay.settings.topicPrefix) else { return }
        if let hint = invitingHint, rendezvous[.rendezvous(hint: hint, inviting: true)] == nil {
            guard let topics = RelayRendezvousTopics(prefix: prefix, hint: hint) else { return }
            rendezvous[.rendezvous(hint: hint, inviting: true)] = Rendezvous(topics: topics)
        }
        let day = today
        for (route, var state) in rendezvous {
            guard case .rendezvous(_, let inviting) = route else { continue }
            let wanted = inviting ? state.topics.inviterSubscriptions(day: day) : state.topics.joinerSubscriptions(day: day)
            for topic in state.subscribed where !wanted.contains(topic) { unsubscribe(topic) }
            for topic in wanted where !state.subscribed.contains(topic) {
                topicOwners[topic] = route
                relay.link?.subscribe(topic, qos: .atLeastOnce)
            }
            state.subscribed = wanted
            rendezvous[route] = state
        }
    }

    /// Stops listening on `route`.
    private func leave(_ route: RouteKey) {
        guard let state = rendezvous.removeValue(forKey: route) else { return }
        state.subscribed.forEach(unsubscribe)
    }

    // MARK: - Joiner

    /// Opens a pairing path to whoever shows a code with `hint`, once the broker confirmed the
    /// subscriptions its answer comes on.
    func dialRendezvous<Result: Sendable>(hint: String, address: PathAddress, kind: ConnectionKind, on loop: any EventLoop,
                                          _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result {
        let route = RouteKey.rendezvous(hint: hint, inviting: false)
        let confirmed = loop.flatSubmit { () -> EventLoopFuture<Bool> in
            guard self.relay.link?.isConnected == true else {
                return loop.makeFailedFuture(PathConnectError(address: address, reason: "the relay broker is not connected"))
            }
            if self.rendezvous[route] == nil {
                guard let prefix = try? RelayTopicPrefix(self.relay.settings.topicPrefix),
                      let topics = RelayRendezvousTopics(prefix: prefix, hint: hint) else {
                    return loop.makeFailedFuture(PathConnectError(address: address, reason: "not a pairing code's hint"))
                }
                self.rendezvous[route] = Rendezvous(topics: topics)
            }
            self.rendezvous[route]?.dials += 1
            self.refreshRendezvous()
            return self.waitSubscribed(self.rendezvous[route]?.subscribed ?? [], on: loop)
        }
        let subscribed = try await confirmed.get()  // a throw here reserved nothing
        let path: RelayStreamPath
        do {
            guard subscribed else {
                throw PathConnectError(address: address, reason: "the relay broker did not confirm the subscription within \(Self.subscribeTimeout.nanoseconds / 1_000_000_000) s")
            }
            path = try await loop.submit {
                guard let topics = self.rendezvous[route]?.topics else {
                    throw PathConnectError(address: address, reason: "the relay is stopping")
                }
                return self.open(route: route, pathID: .random(), preamble: kind.preamble, remote: address, on: loop,
                                 outbound: { day in topics.joinerToInviter(day: day) })
            }.get()
        } catch {
            loop.execute { self.endDial(route) }
            throw error
        }
        defer { path.close() }
        var frames = PathFrames(path.inbound.source)
        return try await body(path, &frames)
    }

    /// A path on a rendezvous closed: a joiner's rendezvous ends with its last dial.
    func rendezvousPathClosed(_ route: RouteKey, _ pathID: RelayPathID) {
        rendezvous[route]?.receiver.closeLocally(pathID)
        if case .rendezvous(_, false) = route { endDial(route) }
    }

    private func endDial(_ route: RouteKey) {
        guard var state = rendezvous[route] else { return }
        state.dials -= 1
        rendezvous[route] = state
        if state.dials <= 0 { leave(route) }
    }

    /// A future that succeeds with true once the broker confirmed every topic of `topics`, with
    /// false after ``subscribeTimeout``.
    private func waitSubscribed(_ topics: [String], on loop: any EventLoop) -> EventLoopFuture<Bool> {
        guard let link = relay.link, !topics.isEmpty else { return loop.makeSucceededFuture(false) }
        if topics.allSatisfy(link.isSubscribed) { return loop.makeSucceededFuture(true) }
        let promise = loop.makePromise(of: Bool.self)
        let id = UInt64.random(in: 0 ... .max)
        subscriptionWaiters.append(SubscriptionWaiter(id: id, topics: topics, promise: promise))
        loop.scheduleTask(in: Self.subscribeTimeout) { [weak self] in
            guard let self, let index = self.subscriptionWaiters.firstIndex(where: { $0.id == id }) else { return }
            self.subscriptionWaiters.remove(at: index).promise.succeed(false)
        }
        return promise.futureResult
    }

    /// The broker confirmed `topic`: the dials whose topics are all confirmed go on.
    func subscriptionConfirmed(_ topic: String) {
        guard let link = relay.link, !subscriptionWaiters.isEmpty else { return }
        let ready = subscriptionWaiters.filter { $0.topics.allSatisfy(link.isSubscribed) }
        subscriptionWaiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
        for waiter in ready { waiter.promise.succeed(true) }
    }

    /// The transport closes: waiting dials fail.
    func failSubscriptionWaiters() {
        let waiters = subscriptionWaiters
        subscriptionWaiters.removeAll()
        for waiter in waiters { waiter.promise.succeed(false) }
    }

    // MARK: - Receiving

    /// One message on a rendezvous topic: a joiner's new path is accepted (inviter), the
    /// answer on a path this device dialled goes to it (joiner); nothing else is taken.
    func receivedOnRendezvous(_ message: MQTTMessage, route: RouteKey, on loop: any EventLoop) {
        guard case .rendezvous(let hint, let inviting) = route, var state = rendezvous[route] else { return }
        let actions = state.receiver.receive(message.payload)
        rendezvous[route] = state
        let address = PathAddress.relay(RelayAddress(broker: brokerHost, route: .rendezvous(Array(hint.utf8))))
        for action in actions {
            switch action {
            case .opened(let id):
                let key = PathKey(route: route, path: id)
                // Opened once per path ID: a copy of a joiner's path never becomes a second attempt.
                guard paths[key] == nil, inviting, hint == invitingHint else { continue }
                let topics = state.topics
                accept(open(route: route, pathID: id, preamble: nil, remote: address, on: loop,
                            outbound: { day in topics.inviterToJoiner(day: day) }))
            case .streamData(let id, let bytes):
                guard let path = paths[PathKey(route: route, path: id)] else { continue }
                if !path.inbound.append(bytes) { path.close() }
            case .closed(let id, _):
                paths[PathKey(route: route, path: id)]?.remoteEnded()
            case .datagram, .mailboxItem, .mailboxAck, .mailboxSnapshot:
                continue  // a rendezvous carries pairing paths only
            }
        }
    }
}
