// mesh-vectors: runs public test vectors against MeshCrypto.
//
//   mesh-vectors noise FILE   Noise vectors (cacophony `protocol_name` or noise-c `name` format)
//   mesh-vectors cpace FILE   CPace vectors (one object, or {"vectors": [...]})
//
// Prints one line per failing vector, the unsupported count on its own line, and ends with
// "N passed, M failed". Exit status 0 only when nothing failed and at least one vector ran.
import Foundation
import MeshCrypto

let usage = """
usage: mesh-vectors noise FILE
       mesh-vectors cpace FILE
"""

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data(("mesh-vectors: " + message + "\n").utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "-h" || arguments.first == "--help" {
    print(usage)
    exit(0)
}
guard arguments.count == 2, ["noise", "cpace"].contains(arguments[0]) else {
    fail("expected a kind and a file\n" + usage, status: 2)
}
let path = arguments[1]
guard let data = FileManager.default.contents(atPath: path) else {
    fail("cannot read \(path) (does it exist and is it readable?)", status: 2)
}

let report: VectorReport
do {
    report = arguments[0] == "noise"
        ? try NoiseVectorRunner.run(fileContents: Array(data))
        : try CPaceVectorRunner.run(fileContents: Array(data))
} catch {
    fail("\(path): \(error)", status: 2)
}

for line in report.failures { print("FAIL \(line)") }
if report.unsupported > 0 {
    print("\(report.unsupported) unsupported (\(report.unsupportedProtocols.joined(separator: ", ")))")
} else {
    print("0 unsupported")
}
print("\(report.passed) passed, \(report.failed) failed")
if report.passed == 0 && report.failed == 0 {
    FileHandle.standardError.write(Data("mesh-vectors: no vector ran\n".utf8))
}
exit(report.isSuccess ? 0 : 1)
