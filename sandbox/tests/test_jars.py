"""Finding a JDK and fetching Hadoop's jars once (tfyarn_sandbox.jars), with a fake Maven.

``mvn`` and ``java`` are shell scripts in ``tmp_path`` put first on ``PATH``;
nothing reaches a Maven repository.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest
from tfyarn_sandbox import jars as hadoop_jars
from tfyarn_sandbox.config import HADOOP_VERSION, SandboxError
from tfyarn_sandbox.jars import ensure_hadoop_jars, find_java_home

POM = Path(hadoop_jars.__file__).with_name("pom.xml")

#: Records its arguments, then copies one "jar" into -DoutputDirectory (or fails).
FAKE_MVN = """#!/bin/sh
echo "$@" >> "{calls}"
[ -n "$MVN_FAIL" ] && {{ echo "BUILD FAILURE: $MVN_FAIL"; exit 1; }}
for a in "$@"; do case "$a" in -DoutputDirectory=*) out=${{a#-DoutputDirectory=}} ;; esac; done
mkdir -p "$out" && echo jar > "$out/hadoop-client-api.jar"
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TFYARN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def mvn_calls(tmp_path, monkeypatch) -> Path:
    """The fake ``mvn`` on ``PATH``; the returned file gets one line per run."""
    calls = tmp_path / "mvn-calls"
    executable(tmp_path / "tools" / "mvn", FAKE_MVN.format(calls=calls))
    monkeypatch.setenv("PATH", f"{tmp_path / 'tools'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("MVN_FAIL", raising=False)
    return calls


def runs(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


# -- the JDK -------------------------------------------------------------------------------
def test_java_home_is_java_home_when_it_has_a_java(tmp_path, monkeypatch):
    executable(tmp_path / "jdk" / "bin" / "java", "#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert find_java_home() == tmp_path / "jdk"


def test_java_home_is_found_from_the_java_on_path_otherwise(tmp_path, monkeypatch):
    java = executable(tmp_path / "jvm" / "jdk-17" / "bin" / "java", "#!/bin/sh\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(java)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "not-a-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_java_home() == tmp_path / "jvm" / "jdk-17"


def test_no_java_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="no Java found: install a JDK 17"):
        find_java_home()


# -- the jars ------------------------------------------------------------------------------
def test_jars_are_resolved_once(cache, mvn_calls):
    lib = ensure_hadoop_jars()
    home = cache / f"hadoop-{HADOOP_VERSION}"
    assert lib == home / "lib"
    assert (lib / "hadoop-client-api.jar").read_text() == "jar\n"
    assert (home / ".complete").read_text() == hashlib.sha256(POM.read_bytes()).hexdigest()
    assert not (home / "lib.partial").exists()
    [call] = runs(mvn_calls)
    assert f"-f {POM} -Dhadoop.version={HADOOP_VERSION} dependency:copy-dependencies" in call
    assert ensure_hadoop_jars() == lib
    assert len(runs(mvn_calls)) == 1


def test_resolved_jars_are_found_without_waiting_for_the_lock(cache, mvn_calls):
    """A start does not queue behind another start's resolution when the jars are there."""
    lib = ensure_hadoop_jars()
    found: list[Path] = []
    with hadoop_jars.locked(lib.parent / ".lock"):
        reader = threading.Thread(target=lambda: found.append(ensure_hadoop_jars()), daemon=True)
        reader.start()
        reader.join(timeout=10)
    assert found == [lib]


def test_a_changed_pom_resolves_again_and_replaces_the_old_jars(cache, mvn_calls):
    lib = ensure_hadoop_jars("3.4.1")
    (lib / "stale.jar").write_text("old")
    (lib.parent / ".complete").write_text("digest of an older pom")
    assert ensure_hadoop_jars("3.4.1") == lib
    assert len(runs(mvn_calls)) == 2
    assert "-Dhadoop.version=3.4.1" in runs(mvn_calls)[1]
    assert sorted(p.name for p in lib.iterdir()) == ["hadoop-client-api.jar"]


def test_a_failed_resolution_reports_mavens_output_and_leaves_no_marker(
    cache, mvn_calls, monkeypatch
):
    monkeypatch.setenv("MVN_FAIL", "artifact not found")
    with pytest.raises(SandboxError, match=r"(?s)resolving Hadoop .* failed.*artifact not found"):
        ensure_hadoop_jars()
    home = cache / f"hadoop-{HADOOP_VERSION}"
    assert not (home / ".complete").exists()
    assert not (home / "lib").exists()
    monkeypatch.delenv("MVN_FAIL")
    assert (ensure_hadoop_jars() / "hadoop-client-api.jar").exists()


def test_no_maven_says_what_to_install(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxError, match=r"Maven \(mvn\) is needed once"):
        ensure_hadoop_jars()


def test_locked_creates_its_lock_file(tmp_path):
    lock = tmp_path / "a" / "b" / ".lock"
    with hadoop_jars.locked(lock):
        assert lock.exists()
    with hadoop_jars.locked(lock):  # released: taking it again does not block
        pass
