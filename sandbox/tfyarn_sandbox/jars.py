"""What the sandbox's JVMs run on: Apache Hadoop's jars, fetched once by Maven, and a JDK.

``ensure_hadoop_jars`` runs ``mvn dependency:copy-dependencies`` on the
``pom.xml`` shipped with this package into
``~/.cache/tfyarn/hadoop-<version>/lib`` the first time, under a file lock so
concurrent starts resolve once; later calls only compare the pom's digest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tfyarn_sandbox.config import HADOOP_VERSION, SandboxError, cache_dir


def find_java_home() -> Path:
    """``JAVA_HOME`` if set, else the JDK of the ``java`` on ``PATH``."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return Path(env)
    java = shutil.which("java")
    if not java:
        raise SandboxError("no Java found: install a JDK 17 and set JAVA_HOME")
    return Path(os.path.realpath(java)).parent.parent


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_hadoop_jars(version: str = HADOOP_VERSION) -> Path:
    """Resolve the Hadoop jars from Maven Central once; return their folder."""
    home = cache_dir() / f"hadoop-{version}"
    lib = home / "lib"
    marker = home / ".complete"
    pom = Path(__file__).with_name("pom.xml")
    # The marker holds the pom's digest, so a changed artifact list re-resolves.
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    if marker.exists() and marker.read_text() == digest:
        return lib
    with locked(home / ".lock"):
        if marker.exists() and marker.read_text() == digest:
            return lib
        mvn = shutil.which("mvn")
        if not mvn:
            raise SandboxError("Maven (mvn) is needed once to fetch Hadoop's jars: install maven")
        staging = home / "lib.partial"
        shutil.rmtree(staging, ignore_errors=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), f"-Dhadoop.version={version}",
            "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SandboxError(
                f"resolving Hadoop {version} with Maven failed:\n{proc.stdout[-3000:]}"
                f"{proc.stderr[-2000:]}"
            )
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
        marker.write_text(digest)
    return lib
