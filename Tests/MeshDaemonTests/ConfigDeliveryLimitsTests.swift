import MeshDaemon
import Testing

@Suite("meshd.toml delivery limits")
struct ConfigDeliveryLimitsTests {
    private func message(_ text: String) -> String? {
        do {
            _ = try ConfigFile(parsing: text, fileName: "meshd.toml")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func everyLimitKeyIsReadAndReachesTheStoreAndRouterOptions() throws {
        let text = """
            outbox_max_items_per_peer = 3
            outbox_max_bytes_per_peer = 1_048_576
            outbox_max_items = 10
            outbox_max_bytes = 0x200000
            inbox_max_items = 50
            inbox_max_bytes = 4096
            dedup_horizon_per_peer = 5000
            store_max_bytes = 67_108_864
            store_synchronous = "normal"
            pending_max_items = 20
            """
        let file = try ConfigFile(parsing: text, fileName: "meshd.toml")
        let store = file.delivery.storeOptions(DeliveryStoreOptions())
        #expect(store.maxOutboxItemsPerPeer == 3)
        #expect(store.maxOutboxBytesPerPeer == 1 << 20)
        #expect(store.maxOutboxItemsTotal == 10)
        #expect(store.maxOutboxBytesTotal == 2 << 20)
        #expect(store.maxInboxItems == 50)
        #expect(store.maxInboxBytes == 4096)
        #expect(store.dedupHorizonPerPeer == 5000)
        #expect(store.maxDatabaseBytes == 64 << 20)
        #expect(store.synchronous == .normal)
        #expect(file.delivery.routerOptions(DeliveryRouterOptions()).pendingCapacity == 20)
    }

    @Test func everyInboundLimitKeyReachesThePeerStateLimits() throws {
        let text = """
            inbound_max_slots_per_peer = 11
            inbound_max_slot_bytes_per_peer = 2048
            inbound_max_slots = 12
            inbound_max_slot_bytes = 4096
            inbound_max_sessions_per_peer = 13
            inbound_max_sessions = 14
            inbound_max_anchors_per_peer = 15
            inbound_max_anchors = 16
            """
        let limits = try ConfigFile(parsing: text, fileName: "meshd.toml").delivery.storeOptions(DeliveryStoreOptions()).peerState
        #expect(limits == PeerStateLimits(slotsPerPeer: 11, slotBytesPerPeer: 2048, slots: 12, slotBytes: 4096,
                                          sessionsPerPeer: 13, sessions: 14, anchorsPerPeer: 15, anchors: 16))
        #expect(message("inbound_max_slot_bytes = 10")?.contains("out of range; use 1024 to") == true)
        #expect(message("inbound_max_sessions = 0")?.contains("out of range; use 1 to 10000000 rows") == true)
        let inbox = try ConfigFile(parsing: "inbox_max_items = 10\ninbox_max_bytes_per_peer = 2048\ninbox_expire_unattached_after = 60",
                                   fileName: "meshd.toml").delivery
        #expect(inbox.storeOptions(DeliveryStoreOptions()).maxInboxItemsPerPeer == 5, "half of the inbox unless set")
        #expect(inbox.storeOptions(DeliveryStoreOptions()).maxInboxBytesPerPeer == 2048)
        #expect(inbox.routerOptions(DeliveryRouterOptions()).inboxUnattachedExpiry == 60)
        #expect(message("inbox_max_items = 10\ninbox_max_items_per_peer = 11")?.contains("must not exceed inbox_max_items (10)") == true)
    }

    @Test func withoutTheKeysTheDefaultsStay() throws {
        let file = try ConfigFile(parsing: "name = \"a\"", fileName: "meshd.toml")
        #expect(file.delivery.storeOptions(DeliveryStoreOptions()) == DeliveryStoreOptions())
        #expect(file.delivery.routerOptions(DeliveryRouterOptions()) == DeliveryRouterOptions())
        #expect(DeliveryStoreOptions().synchronous == .full)
        #expect(DeliveryRouterOptions().pendingCapacity == 200)
    }

    @Test(arguments: [
        ("outbox_max_items_per_peer", "1", "100000000"),
        ("outbox_max_items", "1", "100000000"),
        ("inbox_max_items", "1", "100000000"),
        ("outbox_max_bytes_per_peer", "1024", "17592186044416"),
        ("outbox_max_bytes", "1024", "17592186044416"),
        ("inbox_max_bytes", "1024", "17592186044416"),
        ("store_max_bytes", "1048576", "17592186044416"),
        ("dedup_horizon_per_peer", "1000", "1000000"),
        ("pending_max_items", "1", "100000"),
    ])
    func integerKeysTakeTheirBoundsAndRefuseWhatIsOutside(key: String, lowest: String, highest: String) throws {
        // Both bounds are accepted (with the per-peer outbox limit ≤ the total one).
        let outbox = key.hasPrefix("outbox")
        let total = outbox && key.hasSuffix("_per_peer") ? "\n\(key.replacingOccurrences(of: "_per_peer", with: "")) = \(highest)" : ""
        let perPeer = outbox && !key.hasSuffix("_per_peer") ? "\n\(key)_per_peer = \(lowest)" : ""
        #expect(message("\(key) = \(lowest)\(perPeer)") == nil)
        #expect(message("\(key) = \(highest)\(total)") == nil)

        let unit = key.contains("bytes") ? "bytes" : key.hasPrefix("dedup") ? "event IDs" : "items"
        let below = (Int64(lowest) ?? 1) - 1
        #expect(message("\(key) = \(below)") == "meshd.toml:1: key '\(key)': \(below) is out of range; use \(lowest) to \(highest) \(unit)")
        let above = (Int64(highest) ?? 0) + 1
        #expect(message("\(key) = \(above)") == "meshd.toml:1: key '\(key)': \(above) is out of range; use \(lowest) to \(highest) \(unit)")
        #expect(message("\(key) = -5") == "meshd.toml:1: key '\(key)': -5 is out of range; use \(lowest) to \(highest) \(unit)")
        #expect(message("\(key) = \"100\"") == "meshd.toml:1: key '\(key)': must be an integer number of \(unit) (e.g. \(lowest)), got a string")
        #expect(message("\(key) = 2.5") == "meshd.toml:1: key '\(key)': must be an integer number of \(unit) (e.g. \(lowest)), got a float")
        #expect(message("\(key) = true") == "meshd.toml:1: key '\(key)': must be an integer number of \(unit) (e.g. \(lowest)), got a boolean")
    }

    @Test(arguments: [
        ("store_synchronous = \"full\"", nil),
        ("store_synchronous = 'normal'", nil),
        ("store_synchronous = \"FULL\"", "meshd.toml:1: key 'store_synchronous': 'FULL' is not a mode; use \"full\" (survives power loss) or \"normal\" (survives a daemon crash; faster)"),
        ("store_synchronous = \"off\"", "meshd.toml:1: key 'store_synchronous': 'off' is not a mode; use \"full\" (survives power loss) or \"normal\" (survives a daemon crash; faster)"),
        ("store_synchronous = 1", "meshd.toml:1: key 'store_synchronous': must be \"full\" or \"normal\", got an integer"),
    ] as [(String, String?)])
    func synchronousIsFullOrNormal(text: String, expected: String?) {
        #expect(message(text) == expected)
    }

    @Test(arguments: [
        // Per-peer above the total set in the file: the per-peer key is named.
        ("outbox_max_items = 5\noutbox_max_items_per_peer = 6",
         "meshd.toml:2: key 'outbox_max_items_per_peer': outbox_max_items_per_peer (6) must not exceed outbox_max_items (5)"),
        // Per-peer above the default total.
        ("\noutbox_max_items_per_peer = 2_000_000",
         "meshd.toml:2: key 'outbox_max_items_per_peer': outbox_max_items_per_peer (2000000) must not exceed outbox_max_items (1000000, the default)"),
        ("outbox_max_bytes_per_peer = 2147483648",
         "meshd.toml:1: key 'outbox_max_bytes_per_peer': outbox_max_bytes_per_peer (2147483648) must not exceed outbox_max_bytes (1073741824, the default)"),
    ])
    func aPerPeerOutboxLimitMayNotExceedTheTotal(text: String, expected: String) {
        #expect(message(text) == expected)
    }

    @Test func aLowerTotalWithoutAPerPeerKeyLowersThePerPeerLimit() throws {
        #expect(message("outbox_max_items = 10\noutbox_max_bytes = 1_048_576") == nil)
        var file = DeliveryLimitsConfig()
        file.outboxMaxItems = 10
        file.outboxMaxBytes = 1_048_576
        let options = file.storeOptions(DeliveryStoreOptions())
        #expect(options.maxOutboxItemsPerPeer == 10)
        #expect(options.maxOutboxBytesPerPeer == 1_048_576)
        // A per-peer key that is set stays as set.
        file.outboxMaxItemsPerPeer = 4
        #expect(file.storeOptions(DeliveryStoreOptions()).maxOutboxItemsPerPeer == 4)
    }

    @Test func theExampleInCONFIGmdIsAccepted() throws {
        let text = """
            name = "kitchen-pi"
            socket_mode = 0o660          # members of group sessionmesh may use meshctl
            pairing_code_lifetime = 300

            # A small device: keep at most 10 000 reliable items / 64 MiB per peer queued.
            outbox_max_items_per_peer = 10_000
            outbox_max_bytes_per_peer = 67_108_864
            store_max_bytes = 536_870_912   # the whole delivery.sqlite at most 512 MiB
            """
        let options = try ConfigFile(parsing: text, fileName: "meshd.toml").delivery.storeOptions(DeliveryStoreOptions())
        #expect(options.maxOutboxItemsPerPeer == 10_000)
        #expect(options.maxOutboxBytesPerPeer == 64 << 20)
        #expect(options.maxDatabaseBytes == 512 << 20)
    }

    @Test func perPeerEqualToTheTotalIsFine() {
        #expect(message("outbox_max_items = 3\noutbox_max_items_per_peer = 3\noutbox_max_bytes = 4096\noutbox_max_bytes_per_peer = 4096") == nil)
    }

    @Test func theLoaderPutsTheLimitsIntoTheConfiguration() throws {
        let files = ["/etc/sessionmesh/meshd.toml": "outbox_max_items_per_peer = 3\nstore_synchronous = \"normal\"\npending_max_items = 7\n"]
        let loader = ConfigurationLoader(environment: [:], workingDirectory: "/work") { files[$0] }
        let configuration = try loader.load(mode: .system, overrides: .init())
        #expect(configuration.storeOptions.maxOutboxItemsPerPeer == 3)
        #expect(configuration.storeOptions.maxOutboxItemsTotal == DeliveryStoreOptions().maxOutboxItemsTotal)
        #expect(configuration.storeOptions.synchronous == .normal)
        #expect(configuration.routerOptions.pendingCapacity == 7)

        let plain = try ConfigurationLoader(environment: [:], workingDirectory: "/work") { _ in nil }
            .load(mode: .system, overrides: .init())
        #expect(plain.storeOptions == DeliveryStoreOptions())
        #expect(plain.routerOptions == DeliveryRouterOptions())
    }

    @Test func aFullStoreNamesTheKeyToRaise() {
        let error = StoreError(code: .full, operation: "enqueue outbox item", path: "/s/delivery.sqlite",
                               limit: .outboxItemsPerPeer(3), detail: "the outbox holds 3 items for this peer")
        #expect(error.description.hasSuffix("or raise the limit (`outbox_max_items_per_peer` in meshd.toml)"))
        let disk = StoreError(code: .full, operation: "enqueue outbox item", path: "/s/delivery.sqlite",
                              limit: .disk, detail: "database or disk is full")
        #expect(disk.description.hasSuffix("or free disk space"))
    }
}
