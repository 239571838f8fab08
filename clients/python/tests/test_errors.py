"""Every error code the docs list maps to its own exception class."""
import os
import re
import unittest

import sessionmesh
from sessionmesh.errors import ERROR_CLASSES, DaemonError, error_for_code

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "LOCAL-API.md")


class ErrorMappingTests(unittest.TestCase):
    def test_every_documented_code_has_a_typed_exception(self):
        if not os.path.exists(DOCS):
            self.skipTest("docs/LOCAL-API.md is not next to this client (installed elsewhere)")
        with open(DOCS, encoding="utf-8") as handle:
            codes = set(re.findall(r"^\| `([a-z]+(?:-[a-z]+)*)` \| (?:yes|no) \|", handle.read(), re.MULTILINE))
        self.assertGreater(len(codes), 35)
        for code in sorted(codes):
            with self.subTest(code=code):
                error = error_for_code(code, "text", "send")
                self.assertIsNot(type(error), DaemonError, f"{code} has no class of its own")
                self.assertEqual(error.code, code)
                self.assertIsInstance(error, sessionmesh.MeshError)

    def test_not_permitted_and_unknown_codes(self):
        self.assertIsInstance(error_for_code("not-permitted", "no"), sessionmesh.NotPermittedError)
        future = error_for_code("some-new-code", "from a newer daemon", "status")
        self.assertIs(type(future), DaemonError)
        self.assertEqual(str(future), "status: from a newer daemon (some-new-code)")
        self.assertTrue(ERROR_CLASSES["shutting-down"].closes_connection)
        self.assertFalse(ERROR_CLASSES["queue-full"].closes_connection)


if __name__ == "__main__":
    unittest.main()
