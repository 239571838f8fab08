import MeshCrypto
import Testing
@testable import MeshDaemon

/// The relay topic names of docs/PROTOCOL.md ("The relay path"), computed independently with
/// Python's `hmac`, `hashlib` and `base64`, and the rules every topic keeps.
@Suite("Relay topics")
struct RelayTopicsTests {
    static let pairKey = SecretBytes(Array(0..<32))
    /// Private key 01 02 … 20 (the identity of the page's vectors): the lower public key.
    static let keyA = try! X25519KeyPair(privateKey: SecretBytes(Array(1...32))).publicKey
    /// Private key 21 22 … 40.
    static let keyB = try! X25519KeyPair(privateKey: SecretBytes(Array(33...64))).publicKey
    static let day: UInt32 = 20424

    static var topicsOfA: RelayPairTopics { RelayPairTopics(prefix: .standard, pairKey: pairKey, ownPublicKey: keyA, peerPublicKey: keyB)! }
    static var topicsOfB: RelayPairTopics { RelayPairTopics(prefix: .standard, pairKey: pairKey, ownPublicKey: keyB, peerPublicKey: keyA)! }

    static let vectors: [(String, String)] = [
        ("channel A to B, day 20424", "sessionmesh/wwpknnpmzkum3q7c64fpbtb2qnepnapq"),
        ("channel A to B, day 20423", "sessionmesh/qjdkmqj6ki2xokvwnxizuihhjpuvrgdi"),
        ("channel B to A, day 20424", "sessionmesh/krji2glkwgvuaxgozqqveoljmwkyvi6r"),
        ("channel B to A, day 20423", "sessionmesh/3mfeee2yji64ipssrxf5zxau75gor2ub"),
        ("mailbox of B (from A)", "sessionmesh/3egbccrxhueh6p56qowvz6iibjxasgdj"),
        ("mailbox of A (from B)", "sessionmesh/oqudhwmp3maptzdd3ijz6ol7n6d7pxte"),
        ("rendezvous 7K joiner to inviter, day 20424", "sessionmesh/tyqdggtf2ybgasn2qjk4pd2bsx47fjai"),
        ("rendezvous 7K inviter to joiner, day 20424", "sessionmesh/n2gszte6ul6xzooigmo5tif3lh2s6neg"),
    ]

    @Test func theKeysOfThePageAreOrderedAsItSays() {
        #expect(ProtocolPage.hex(Self.keyA).hasPrefix("07 a3 7c bc"))
        #expect(ProtocolPage.hex(Self.keyB).hasPrefix("58 69 af f4"))
        #expect(Self.keyA.lexicographicallyPrecedes(Self.keyB))
    }

    @Test func theTopicKeyOfThePageFollowsTheFormula() throws {
        let key = PairingSupport.hkdfSHA256(secret: Self.pairKey, salt: Array("SessionMesh relay topic v1".utf8),
                                            info: Self.keyA + Self.keyB)
        let hex = "3e a3 bd 5b 93 fb dc a0 1a 6b 75 70 17 c6 31 a2 ee e7 7a be ad 12 0c 0d 95 b1 32 e9 e8 97 b4 f5"
        #expect(ProtocolPage.hex(key.withUnsafeBytes { Array($0) }) == hex)
        #expect(try ProtocolPage.compactText().contains(ProtocolPage.compact(hex)))
        let name = PairingSupport.hmacSHA256(key: key, message: Array("channel".utf8) + [1, 0, 0, 0x4F, 0xC8])
        #expect("sessionmesh/" + RelayTopicName.encode(name) == Self.vectors[0].1)
    }

    @Test func channelTopicsMatchTheVectors() {
        let a = Self.topicsOfA, b = Self.topicsOfB
        #expect(a.outboundChannel(day: Self.day) == Self.vectors[0].1)
        #expect(a.outboundChannel(day: Self.day - 1) == Self.vectors[1].1)
        #expect(b.outboundChannel(day: Self.day) == Self.vectors[2].1)
        #expect(b.outboundChannel(day: Self.day - 1) == Self.vectors[3].1)
        // Each side listens where the other publishes, today's and yesterday's.
        #expect(b.inboundChannel(day: Self.day) == [Self.vectors[0].1, Self.vectors[1].1])
        #expect(a.inboundChannel(day: Self.day) == [Self.vectors[2].1, Self.vectors[3].1])
    }

    @Test func mailboxTopicsMatchTheVectorsAndDoNotRotate() {
        let a = Self.topicsOfA, b = Self.topicsOfB
        #expect(a.outboundMailbox == Self.vectors[4].1)
        #expect(b.inboundMailbox == Self.vectors[4].1)
        #expect(b.outboundMailbox == Self.vectors[5].1)
        #expect(a.inboundMailbox == Self.vectors[5].1)
    }

    @Test func rendezvousTopicsMatchTheVectors() throws {
        let rendezvous = try #require(RelayRendezvousTopics(prefix: .standard, hint: "7K"))
        #expect(rendezvous.joinerToInviter(day: Self.day) == Self.vectors[6].1)
        #expect(rendezvous.inviterToJoiner(day: Self.day) == Self.vectors[7].1)
        #expect(rendezvous.inviterSubscriptions(day: Self.day) == [Self.vectors[6].1, rendezvous.joinerToInviter(day: Self.day - 1)])
        #expect(rendezvous.joinerSubscriptions(day: Self.day).first == Self.vectors[7].1)
    }

    @Test func thePageShowsEveryTopicVector() throws {
        let page = try ProtocolPage.compactText()
        for (what, topic) in Self.vectors {
            #expect(page.contains(ProtocolPage.compact(topic)), "docs/PROTOCOL.md no longer shows the \(what) topic \(topic)")
        }
    }

    @Test func everyTopicIsOneFixedLengthLevelOfTheMQTTAlphabet() {
        let prefix = try! RelayTopicPrefix("home/mesh/")
        let pairKeys = (0..<8).map { SecretBytes(Array(repeating: UInt8($0), count: 32)) }
        var topics: [String] = []
        for key in pairKeys {
            let pair = RelayPairTopics(prefix: prefix, pairKey: key, ownPublicKey: Self.keyA, peerPublicKey: Self.keyB)!
            for day in [0, 1, Self.day, UInt32.max] { topics.append(pair.outboundChannel(day: day)) }
            topics += [pair.outboundMailbox, pair.inboundMailbox]
        }
        for hint in ["7K", "00", "ZZ"] {
            topics.append(RelayRendezvousTopics(prefix: prefix, hint: hint)!.joinerToInviter(day: Self.day))
        }
        for topic in topics {
            #expect(topic.hasPrefix("home/mesh/"))
            let name = topic.dropFirst("home/mesh/".count)
            #expect(name.count == 32)
            #expect(name.allSatisfy { ("a"..."z").contains($0) || ("2"..."7").contains($0) }, "\(topic)")
        }
        #expect(Set(topics).count == topics.count, "no two inputs share a topic")
    }

    @Test func theTopicDependsOnThePairKeyNotOnPublicValuesAlone() {
        let other = RelayPairTopics(prefix: .standard, pairKey: SecretBytes(Array(repeating: 7, count: 32)),
                                    ownPublicKey: Self.keyA, peerPublicKey: Self.keyB)!
        #expect(other.outboundChannel(day: Self.day) != Self.topicsOfA.outboundChannel(day: Self.day))
        #expect(other.outboundMailbox != Self.topicsOfA.outboundMailbox)
    }

    @Test func pairsThatCannotExistHaveNoTopics() {
        #expect(RelayPairTopics(prefix: .standard, pairKey: Self.pairKey, ownPublicKey: Self.keyA, peerPublicKey: Self.keyA) == nil)
        #expect(RelayPairTopics(prefix: .standard, pairKey: Self.pairKey, ownPublicKey: [1, 2], peerPublicKey: Self.keyB) == nil)
        #expect(RelayPairTopics(prefix: .standard, pairKey: SecretBytes([1]), ownPublicKey: Self.keyA, peerPublicKey: Self.keyB) == nil)
    }

    @Test(arguments: ["", "7", "7KQ", "7k", "U/", "+#", "é7"])
    func aHintThatIsNotTwoCodeCharactersHasNoRendezvous(hint: String) {
        #expect(RelayRendezvousTopics(prefix: .standard, hint: hint) == nil)
    }

    @Test func theDayIsTheUTCDayAndTheReceiverAcceptsYesterday() {
        #expect(RelayDay.of(wallNanoseconds: 1_764_633_600 * 1_000_000_000) == 20424)
        #expect(RelayDay.of(wallNanoseconds: 1_764_633_600 * 1_000_000_000 - 1) == 20423)
        #expect(RelayDay.of(wallNanoseconds: -5) == 0)
        #expect(RelayDay.of(wallNanoseconds: Int64.max) == 106_751)
        #expect(RelayDay.accepted(at: 20424) == [20424, 20423])
        #expect(RelayDay.accepted(at: 0) == [0])
    }

    @Test(arguments: [
        ("", "is empty"), ("sessionmesh", "does not end with /"), ("a/+/", "wildcard"), ("a/#/", "wildcard"),
        ("$SYS/", "starts with $"), ("a\u{0}/", "printable ASCII"), ("a b/", "printable ASCII"), ("é/", "printable ASCII"),
        (String(repeating: "a", count: 64) + "/", "at most 64"),
    ])
    func aPrefixThatBreaksAnMQTTRuleIsRefusedWithTheRule(text: String, reason: String) {
        #expect(throws: RelayTopicPrefixError.self) { try RelayTopicPrefix(text) }
        do { _ = try RelayTopicPrefix(text) } catch { #expect(error.description.contains(reason), "\(error)") }
    }

    @Test func validPrefixesAreKeptAsWritten() throws {
        #expect(try RelayTopicPrefix("sessionmesh/") == .standard)
        #expect(try RelayTopicPrefix("users/anna/sm/").text == "users/anna/sm/")
        #expect(try RelayTopicPrefix("/").text == "/")
        #expect(try RelayTopicPrefix(String(repeating: "a", count: 63) + "/").text.count == 64)
    }
}
