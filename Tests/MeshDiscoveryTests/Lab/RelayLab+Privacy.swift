import Foundation
import MeshDiscovery

/// What the broker must never learn about the devices: the forms their IDs are printed in, and
/// where to look for them (what the observer saw, the broker's own log).
extension RelayLab {
    /// Every form in which the project prints a device ID (meshctl, logs, mDNS): grouped, without
    /// dashes, the short first group, the mDNS hint, in both cases; and its 30 fingerprint bytes.
    static func printedForms(ofDeviceID id: String) -> (texts: [String], bytes: [UInt8]) {
        let grouped = id.uppercased()
        let plain = grouped.replacingOccurrences(of: "-", with: "")
        let short = String(grouped.split(separator: "-").first ?? "")
        let hint = DiscoveryAdvertisement.deviceIDHint(for: id)
        let texts = [grouped, plain, short, hint].flatMap { [$0, $0.lowercased()] }
        return (Array(Set(texts)).sorted(), fingerprint(ofDeviceID: grouped))
    }

    /// The fingerprint bytes of a grouped device ID (6 base32 data characters, then one check
    /// character, per group).
    static func fingerprint(ofDeviceID id: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var bits: UInt32 = 0, count = 0
        var bytes: [UInt8] = []
        for group in id.split(separator: "-") {
            for character in group.prefix(6) {
                guard let value = alphabet.firstIndex(of: character) else { return [] }
                bits = (bits << 5) | UInt32(value)
                count += 5
                if count >= 8 {
                    count -= 8
                    bytes.append(UInt8((bits >> UInt32(count)) & 0xFF))
                }
            }
        }
        return bytes
    }

    /// The observed lines from `start` on that show any of `texts` in the clear: in the topic,
    /// or in the payload as UTF-8 (its hex); and any that carry one of `byteStrings` raw.
    func leaks(since start: Int, texts: [String], byteStrings: [[UInt8]]) -> [String] {
        let lines = Array(observed.dropFirst(start))
        var found: [String] = []
        for text in texts where !text.isEmpty {
            let hex = Self.hex(Array(text.utf8))
            for line in lines where line.topic.localizedCaseInsensitiveContains(text) || line.payloadHex.contains(hex) {
                found.append("'\(text)' in \(line.topic)")
            }
        }
        for bytes in byteStrings where !bytes.isEmpty {
            let hex = Self.hex(bytes)
            for line in lines where line.payloadHex.contains(hex) || line.topic.lowercased().contains(hex) {
                found.append("\(bytes.count) raw bytes \(hex.prefix(12))… in \(line.topic)")
            }
        }
        return found
    }

    /// The broker's log lines (every run so far: connections with their client IDs and
    /// accounts, subscriptions with their topics) that show any of `texts`, case-insensitively.
    func brokerLogLeaks(texts: [String]) -> [String] {
        let lines = brokerLog
        return texts.filter { !$0.isEmpty }.flatMap { text in
            lines.filter { $0.localizedCaseInsensitiveContains(text) }.map { "'\(text)' in: \($0)" }
        }
    }
}
