import Foundation
import MeshCore
import Testing

/// The version has one source, `SessionMeshVersion.current`; every other place that states it
/// must say the same, or a release ships two versions.
@Suite("version consistency")
struct VersionConsistencyTests {
    private func read(_ path: String) throws -> String {
        try String(contentsOf: ScriptProcess.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func pythonPackageDeclaresTheSameVersion() throws {
        let pyproject = try read("clients/python/pyproject.toml")
        #expect(pyproject.contains("\nversion = \"\(SessionMeshVersion.current)\"\n"), "pyproject.toml's version differs")
        let module = try read("clients/python/src/sessionmesh/_version.py")
        #expect(module.contains("__version__ = \"\(SessionMeshVersion.current)\""), "sessionmesh.__version__ differs")
    }

    @Test func changelogHasASectionForThisVersion() throws {
        let changelog = try read("CHANGELOG.md")
        #expect(changelog.contains("\n## [Unreleased]"))
        #expect(changelog.contains("\n## [\(SessionMeshVersion.current)]"), "CHANGELOG.md has no section for this version")
    }

    @Test func versionIsMajorMinorPatch() {
        let parts = SessionMeshVersion.current.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
    }
}
