import MeshDaemon
import Testing

@Suite("meshd.toml uid share of the outbox")
struct ConfigUIDShareTests {
    private func message(_ text: String) -> String? {
        do {
            _ = try ConfigFile(parsing: text, fileName: "meshd.toml")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func theKeysReachTheStoreOptionsAndDefaultToHalfTheOutbox() throws {
        let set = try ConfigFile(parsing: "uid_max_outbox_items = 7\nuid_max_outbox_bytes = 4096", fileName: "meshd.toml")
        let options = set.delivery.storeOptions(DeliveryStoreOptions())
        #expect(options.maxOutboxItemsPerUID == 7)
        #expect(options.maxOutboxBytesPerUID == 4096)
        let defaults = DeliveryStoreOptions()
        #expect(defaults.maxOutboxItemsPerUID == 500_000)
        #expect(defaults.maxOutboxBytesPerUID == 512 << 20)
        let lower = try ConfigFile(parsing: "outbox_max_items = 100\noutbox_max_bytes = 8192", fileName: "meshd.toml")
            .delivery.storeOptions(DeliveryStoreOptions())
        #expect(lower.maxOutboxItemsPerUID == 50, "half of the outbox set in the file")
        #expect(lower.maxOutboxBytesPerUID == 4096)
    }

    @Test func aShareAboveTheOutboxOrOutOfRangeIsRefusedNamingTheKey() {
        #expect(message("outbox_max_items = 10\nuid_max_outbox_items = 11")?
            .contains("uid_max_outbox_items (11) must not exceed outbox_max_items (10)") == true)
        #expect(message("uid_max_outbox_bytes = 2147483648")?
            .contains("uid_max_outbox_bytes (2147483648) must not exceed outbox_max_bytes (1073741824)") == true)
        #expect(message("uid_max_outbox_items = 0")?.contains("out of range; use 1 to") == true)
        #expect(message("uid_max_outbox_bytes = \"lots\"")?.contains("must be an integer number of bytes") == true)
    }

    @Test func theSessionAndAnchorSharesReachTheStoreOptions() throws {
        let options = try ConfigFile(parsing: "uid_max_sessions = 12\nuid_max_anchors = 34", fileName: "meshd.toml")
            .delivery.storeOptions(DeliveryStoreOptions())
        #expect(options.maxSessionsPerUID == 12)
        #expect(options.maxAnchorsPerUID == 34)
        #expect(DeliveryStoreOptions().maxSessionsPerUID == 4096 && DeliveryStoreOptions().maxAnchorsPerUID == 4096)
        #expect(message("uid_max_sessions = 0")?.contains("out of range; use 1 to") == true)
        #expect(message("uid_max_anchors = 10000001")?.contains("out of range; use 1 to") == true)
    }
}
