"""A minimal PEP 517 build backend (standard library only) for the `sessionmesh` package.

It builds a pure-Python wheel of `src/sessionmesh`, an sdist of this folder, and an editable
wheel that points at `src/`. Name, version, summary, requires-python, license, author, keywords,
classifiers and URLs come from pyproject.toml's [project] and [project.urls] tables; the
repository's LICENSE goes into the wheel's .dist-info.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "sessionmesh"
SOURCE = os.path.join(ROOT, "src", PACKAGE)


def _pyproject() -> str:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
        return handle.read()


def _table(text: str, name: str) -> str:
    """The body of the TOML table `[name]` (up to the next table header)."""
    parts = text.split(f"\n[{name}]\n", 1)
    return parts[1].split("\n[", 1)[0] if len(parts) == 2 else ""


def _project() -> Dict[str, str]:
    section = _table("\n" + _pyproject(), "project")
    fields = {}
    for key in ("name", "version", "description", "requires-python", "readme"):
        match = re.search(r'^' + re.escape(key) + r'\s*=\s*"([^"]*)"', section, re.MULTILINE)
        if match:
            fields[key] = match.group(1)
    license_match = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"\s*\}', section, re.MULTILINE)
    if license_match:
        fields["license"] = license_match.group(1)
    author = re.search(r'^authors\s*=\s*\[\s*\{\s*name\s*=\s*"([^"]*)"\s*,\s*email\s*=\s*"([^"]*)"', section, re.MULTILINE)
    if author:
        fields["author"], fields["author-email"] = author.group(1), author.group(2)
    return fields


def _string_list(key: str) -> List[str]:
    """A `key = ["…", …]` array of [project] (one string per line or on one line)."""
    section = _table("\n" + _pyproject(), "project")
    match = re.search(r'^' + re.escape(key) + r'\s*=\s*\[(.*?)\]', section, re.MULTILINE | re.DOTALL)
    return re.findall(r'"([^"]*)"', match.group(1)) if match else []


def _urls() -> List[Tuple[str, str]]:
    section = _table("\n" + _pyproject(), "project.urls")
    return re.findall(r'^([A-Za-z][A-Za-z0-9 _-]*?)\s*=\s*"([^"]*)"', section, re.MULTILINE)


def _license_file() -> Optional[str]:
    """The repository's LICENSE (two folders up), when building from a checkout."""
    path = os.path.join(os.path.dirname(os.path.dirname(ROOT)), "LICENSE")
    return path if os.path.exists(path) else None


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '>=3.9')}"]
    if "license" in p:
        lines.append(f"License: {p['license']}")
    if "author" in p:
        lines.append(f"Author: {p['author']}")
        lines.append(f"Author-email: {p['author']} <{p['author-email']}>")
    keywords = _string_list("keywords")
    if keywords:
        lines.append("Keywords: " + ",".join(keywords))
    urls = _urls()
    for label, url in urls:
        if label == "Homepage":
            lines.append(f"Home-page: {url}")
        lines.append(f"Project-URL: {label}, {url}")
    lines += [f"Classifier: {c}" for c in _string_list("classifiers")]
    body = ""
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as handle:
            body = "\n" + handle.read()
    return "\n".join(lines) + "\n" + body


def _dist_info() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info"


def _wheel_name() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}-py3-none-any.whl"


_WHEEL = "Wheel-Version: 1.0\nGenerator: sessionmesh_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    info = _dist_info()
    files = files + [(f"{info}/METADATA", _metadata().encode()), (f"{info}/WHEEL", _WHEEL.encode()),
                     (f"{info}/top_level.txt", f"{PACKAGE}\n".encode())]
    license_file = _license_file()
    if license_file:
        with open(license_file, "rb") as handle:
            files.append((f"{info}/LICENSE", handle.read()))
    record = []
    name = _wheel_name()
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files:
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
            wheel.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
        record.append(f"{info}/RECORD,,")
        wheel.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return name


def _package_files() -> List[Tuple[str, bytes]]:
    files = []
    for entry in sorted(os.listdir(SOURCE)):
        if entry.endswith(".py") or entry == "py.typed":
            with open(os.path.join(SOURCE, entry), "rb") as handle:
                files.append((f"{PACKAGE}/{entry}", handle.read()))
    return files


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as handle:
        handle.write(_metadata())
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as handle:
        handle.write(_WHEEL)
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    pth = (os.path.join(ROOT, "src") + "\n").encode()
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", pth)])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    base = f"{p['name']}-{p['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for folder, dirs, names in os.walk(ROOT):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".venv", "build", "dist") and not d.startswith("."))
            for entry in sorted(names):
                if entry.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(folder, entry)
                archive.add(path, arcname=os.path.join(base, os.path.relpath(path, ROOT)), recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return name
