import Foundation

/// The single libFuzzer entry point of `mesh-fuzz`: every harness lives in this one binary and
/// `FUZZ_TARGET` (read once) picks which one each input goes to.
enum FuzzTargets {
    static let all: [(name: String, run: @Sendable ([UInt8]) -> Void)] = [
        ("handshake", fuzzHandshake),
        ("datagram", fuzzDatagram),
        ("stream", fuzzStream),
        ("pairing", fuzzPairing),
        ("deviceid", fuzzDeviceID),
        ("channel", fuzzChannel),
        ("handshakepayload", fuzzHandshakePayload),
        ("delivery", fuzzDelivery),
        ("pairmsg", fuzzPairingMessages),
        ("localapi", fuzzLocalAPI),
        ("config", fuzzConfig),
        ("paireddevices", fuzzPairedDevices),
        ("seenbatches", fuzzSeenBatches),
        ("txt", fuzzTXT),
        ("router", fuzzRouter),
        ("relay", fuzzRelay),
        ("roster", fuzzRoster),
    ]

    static let selected: @Sendable ([UInt8]) -> Void = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = all.first(where: { $0.name == name }) else {
            let names = all.map(\.name).joined(separator: " ")
            FileHandle.standardError.write(Data("mesh-fuzz: set FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target.run
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func meshFuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTargets.selected(bytes)
    return 0
}

/// libFuzzer's entry for a program that has its own `main` (SwiftPM links an executable's entry
/// point as `main`, so libFuzzer's own `main` is not used); it runs the fuzzer with the
/// command-line options and calls `LLVMFuzzerInitialize` first.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum MeshFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, meshFuzzTestOneInput))
    }
}
