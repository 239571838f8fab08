import MeshLocalAPI
import NIOCore
import Testing
@testable import MeshDaemon

/// The control role: who may pair, cancel codes and unpair (docs/LOCAL-API.md § roles).
@Suite("control role")
struct ControlRoleTests {
    /// Users 1000 (groups 1000, 50) and 1001 (group 1001); group "admins" is 50.
    struct TableDirectory: UserDirectory {
        func groups(ofUID uid: UInt32) -> Set<UInt32> { [1000: [1000, 50], 1001: [1001]][uid] ?? [] }
        func gid(ofGroupNamed name: String) -> UInt32? { name == "admins" ? 50 : nil }
    }

    static func role(_ entries: [String]) throws -> ControlRole {
        ControlRole(daemonUID: 990, allowList: try ControlAllowList(parsing: entries), directory: TableDirectory())
    }

    static func client(_ uid: UInt32, gid: UInt32? = nil) -> PeerCredentials {
        PeerCredentials(pid: 1, uid: uid, gid: gid ?? uid)
    }

    @Test(arguments: [
        // (control_allow, uid, gid, allowed)
        ([String](), UInt32(0), UInt32(0), true),            // root
        ([], 990, 990, true),                                // the daemon's own user
        ([], 1000, 1000, false),                             // anyone else, by default
        (["1000"], 1000, 1000, true),                        // listed uid
        (["1000"], 1001, 1001, false),
        (["@admins"], 1000, 1000, true),                     // supplementary group from the user database
        (["@admins"], 1001, 1001, false),
        (["@admins"], 1001, 50, true),                       // the connection's effective gid
        (["@50"], 1000, 1000, true),                         // group by gid
        (["@ghosts"], 1000, 1000, false),                    // a group that does not exist grants nothing
        (["@admins"], 4242, 4242, false),                    // a uid without an account
    ])
    func whoHasTheControlRole(entries: [String], uid: UInt32, gid: UInt32, allowed: Bool) throws {
        let role = try Self.role(entries)
        for operation in [LocalAPIOperation.pairCreate, .pairWait, .pairCancel, .pairJoin, .unpair] {
            #expect(role.permits(operation, credentials: Self.client(uid, gid: gid)) == allowed, "\(operation)")
        }
        for operation in [LocalAPIOperation.hello, .status, .peers, .ping] {
            #expect(role.permits(operation, credentials: Self.client(uid, gid: gid)), "\(operation) is open to everyone")
        }
    }

    @Test func unknownCredentialsNeverHaveTheRole() throws {
        #expect(!(try Self.role(["1000", "@admins"])).permits(.unpair, credentials: nil))
    }

    /// Through the dispatcher: a refused operation never reaches the control plane, and the
    /// error names the operation and the uid.
    @Test func refusedOperationsAreNotPerformed() async throws {
        let plane = FakeControlPlane()
        let dispatcher = LocalAPIDispatcher(controlPlane: plane, defaultPairingLifetime: 60, controlRole: try Self.role(["1000"]))
        let stranger = Self.client(1001)
        for request in [LocalAPIRequest.pairCreate(validFor: nil, replace: false, single: false), .pairWait(code: "X"), .pairCancel(code: "X"),
                        .pairJoin(code: "X", address: nil, replace: false, single: false), .unpair(deviceID: "AAAAAAA")] {
            let operation = try #require(request.controlRoleOperation)
            guard case .failure(let error) = await dispatcher.perform(request, credentials: stranger) else {
                Issue.record("\(operation) was performed for uid 1001")
                continue
            }
            #expect(error.code == "not-permitted")
            #expect(error.message.hasPrefix("not permitted: \(operation.name) ") && error.message.contains("uid 1001"), "\(error.message)")
        }
        #expect(await plane.unpaired.isEmpty)
        let allowed = await dispatcher.perform(.unpair(deviceID: "AAAAAAA"), credentials: Self.client(1000))
        #expect((try? allowed.get()) != nil)
        #expect(await plane.unpaired == ["AAAAAAA"])
        let status = await dispatcher.perform(.status, credentials: stranger)
        #expect((try? status.get()) != nil)
    }

    @Test(arguments: [
        ("control_allow = [\"1000\", \"@sessionmesh-admin\", \"@27\"]", nil),
        ("control_allow = \"1000\"", "meshd.toml:1: key 'control_allow': must be an array of \"UID\" or \"@GROUP\" strings, got a string"),
        ("control_allow = [\"alice\"]", "meshd.toml:1: key 'control_allow': 'alice' is not a uid or @GROUP (e.g. \"1000\" or \"@sessionmesh-admin\")"),
        ("control_allow = [\"@\"]", "meshd.toml:1: key 'control_allow': '@' is not @GROUP; a group name is 1 to 32 letters, digits, '.', '_' or '-' (e.g. \"@sessionmesh-admin\")"),
        ("control_allow = [\"-1\"]", "meshd.toml:1: key 'control_allow': '-1' is not a uid or @GROUP (e.g. \"1000\" or \"@sessionmesh-admin\")"),
    ] as [(String, String?)])
    func theConfigKeyIsChecked(text: String, expected: String?) {
        do {
            let file = try ConfigFile(parsing: text, fileName: "meshd.toml")
            #expect(expected == nil)
            #expect(file.controlAllowList == ControlAllowList(uids: [1000], groups: [.name("sessionmesh-admin"), .gid(27)]))
        } catch {
            #expect(error.description == expected)
        }
    }
}
