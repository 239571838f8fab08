/// The release version of this build of SessionMesh.
///
/// The one source of truth for the version: `meshd --version`, `meshctl --version`, the `hello`
/// reply's `daemonVersion` and the `status` reply's `version` all print it. The Python package's
/// `__version__` and `pyproject.toml`, and CHANGELOG.md's latest release, carry the same string;
/// `VersionConsistencyTests` fails when one of them differs.
public enum SessionMeshVersion {
    /// `MAJOR.MINOR.PATCH` (Semantic Versioning; 0.x while the wire formats may still change).
    public static let current = "0.1.0"
}
