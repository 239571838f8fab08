/// What `DeliveryRouter.attach` returns (the local API's attach reply).
public struct DeliveryAttachResult: Sendable, Equatable {
    /// One paired device as the attach reply lists it.
    public struct Peer: Sendable, Equatable {
        /// Full device ID.
        public var deviceID: String
        /// Its name.
        public var name: String
        /// Whether its channel is active and an app of one of the attached features is attached there.
        public var reachable: Bool
    }

    /// Handle of this attachment (pass it to `detach`).
    public var attachmentID: UInt64
    /// This device's ID.
    public var localDeviceID: String
    /// Every paired device.
    public var peers: [Peer]
}
