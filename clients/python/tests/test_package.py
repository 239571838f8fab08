"""The package as `pip show` and an importer see it: version, metadata, exception bases, names."""
import os
import re
import subprocess
import sys
import unittest

import sessionmesh
import sessionmesh.aio

PYPROJECT = os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")

try:
    from importlib import metadata as _metadata
except ImportError:  # pragma: no cover (Python < 3.8)
    _metadata = None


def _installed_version():
    try:
        return _metadata.version("sessionmesh") if _metadata else None
    except _metadata.PackageNotFoundError:
        return None


class PackageTests(unittest.TestCase):
    def test_version_is_pyprojects_and_the_installed_one(self):
        with open(PYPROJECT, encoding="utf-8") as handle:
            declared = re.search(r'^version = "([^"]+)"$', handle.read(), re.MULTILINE).group(1)
        self.assertEqual(sessionmesh.__version__, declared)
        installed = _installed_version()
        if installed is None:
            self.skipTest("sessionmesh is not installed (run from a source checkout)")
        self.assertEqual(installed, sessionmesh.__version__)

    def test_pip_show_names_the_license_and_the_urls(self):
        if _installed_version() is None:
            self.skipTest("sessionmesh is not installed (run from a source checkout)")
        shown = subprocess.run([sys.executable, "-m", "pip", "show", "--verbose", "--disable-pip-version-check",
                                "sessionmesh"], capture_output=True, text=True, timeout=60, check=True).stdout
        self.assertIn("License: Apache-2.0", shown)
        self.assertIn("Home-page: file:///usr/local/share/doc/sessionmesh/PYTHON.md", shown)
        self.assertIn("Documentation, file:///usr/local/share/doc/sessionmesh/PYTHON.md", shown)
        self.assertIn("Issues, mailto:", shown)
        self.assertIn("License :: OSI Approved :: Apache Software License", shown)

    def test_connection_errors_are_connection_errors_and_not_found_is_a_lookup_error(self):
        self.assertTrue(issubclass(sessionmesh.DaemonUnreachableError, ConnectionError))
        self.assertTrue(issubclass(sessionmesh.ConnectionLostError, ConnectionError))
        self.assertTrue(issubclass(sessionmesh.NotFoundError, LookupError))
        self.assertTrue(issubclass(sessionmesh.UnknownPeerError, LookupError))
        error = sessionmesh.ConnectionLostError("gone")
        self.assertEqual((str(error), error.code), ("gone (connection-lost)", "connection-lost"))
        self.assertIsInstance(sessionmesh.errors.error_for_code("not-found", "no such item"), LookupError)

    def test_the_asyncio_entry_point_and_its_old_name(self):
        self.assertTrue(callable(sessionmesh.aio.connect))
        self.assertIs(sessionmesh.connect_async, sessionmesh.aio.connect_async)
        self.assertIn("connect", sessionmesh.aio.__all__)

    def test_kinds_and_modes_are_plain_strings(self):
        event = sessionmesh.Event(kind="envelope", mode="reliable")
        self.assertEqual(event.kind, "envelope")
        self.assertEqual(f"{event.kind} {event.mode}", "envelope reliable")


if __name__ == "__main__":
    unittest.main()
