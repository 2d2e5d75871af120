#!/usr/bin/env python3
"""Stages `import graft` (the package, the extension, the shipped rules) in a
folder and writes a wheel of it. Run by scripts/build_wheel.sh after Bazel
built //python:_graft.so.

    make_wheel.py EXTENSION STAGE_DIR WHEEL_DIR
"""

import base64
import hashlib
import os
import shutil
import sys
import sysconfig
import zipfile

VERSION = "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stage(extension: str, stage_dir: str) -> str:
    package = os.path.join(stage_dir, "graft")
    if os.path.exists(package):
        shutil.rmtree(package)
    shutil.copytree(os.path.join(ROOT, "python", "graft"), package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(extension, os.path.join(package, "_graft.so"))
    os.chmod(os.path.join(package, "_graft.so"), 0o755)
    rules = os.path.join(package, "rules")
    shutil.copytree(os.path.join(ROOT, "rules"), rules,
                    ignore=shutil.ignore_patterns("BUILD"))
    return package


def wheel(stage_dir: str, wheel_dir: str) -> str:
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{py}-{py}-{platform}"
    name = f"graft-{VERSION}-{tag}.whl"
    info = f"graft-{VERSION}.dist-info"
    os.makedirs(wheel_dir, exist_ok=True)
    path = os.path.join(wheel_dir, name)
    records = []

    def add(zf, arcname, data):
        digest = base64.urlsafe_b64encode(
            hashlib.sha256(data).digest()).rstrip(b"=").decode()
        info_ = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
        info_.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
        info_.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info_, data)
        records.append(f"{arcname},sha256={digest},{len(data)}")

    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for folder, dirs, files in os.walk(os.path.join(stage_dir, "graft")):
            dirs.sort()
            for f in sorted(files):
                full = os.path.join(folder, f)
                arc = os.path.relpath(full, stage_dir)
                with open(full, "rb") as fh:
                    add(zf, arc, fh.read())
        add(zf, f"{info}/METADATA", (
            "Metadata-Version: 2.1\nName: graft\nVersion: " + VERSION +
            "\nSummary: Rewrite ML dataflow graphs by declarative rules\n"
            "Requires-Python: >=3.11,<3.12\n").encode())
        add(zf, f"{info}/WHEEL", (
            "Wheel-Version: 1.0\nGenerator: graft make_wheel.py\n"
            f"Root-Is-Purelib: false\nTag: {tag}\n").encode())
        record = "\n".join(records + [f"{info}/RECORD,,"]) + "\n"
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD",
                                    date_time=(2026, 1, 1, 0, 0, 0)), record)
    os.replace(tmp, path)
    return path


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    extension, stage_dir, wheel_dir = sys.argv[1:]
    stage(extension, stage_dir)
    print(wheel(stage_dir, wheel_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
