"""A custom task module must be importable in the environment a launch ships: checked here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.ship import task_modules
from tfyarn_jupyter.ship.task_modules import check_task_module


def write_package(root: Path, name: str, main: bool = True, init: str = "") -> Path:
    """``root/name/`` with ``__init__.py`` (holding ``init``), ``task.py``, maybe ``__main__``."""
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init)
    (pkg / "task.py").write_text("print('task')\n")
    if main:
        (pkg / "__main__.py").write_text("print('main')\n")
    return pkg


@pytest.fixture
def notebook_folder(tmp_path, monkeypatch) -> Path:
    """A folder on this process's sys.path (as a notebook's own folder is), not shipped."""
    folder = tmp_path / "notebook"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_a_module_that_does_not_exist_is_refused_naming_it_and_saying_what_to_do():
    module = "no_such_package_4f1c.tasks.train"
    with pytest.raises(SpecError) as exc:
        check_task_module(LaunchOptions(custom_task_module=module))
    message = str(exc.value)
    assert message.startswith(f"custom_task_module={module!r} is not in the environment")
    assert "No module named" in message
    assert "files={'no_such_package_4f1c.py': PATH}" in message and "source_roots=" in message


def test_a_submodule_missing_from_an_installed_package_is_refused():
    with pytest.raises(SpecError, match="is not in the environment a launch ships"):
        check_task_module(LaunchOptions(custom_task_module="json.no_such_task"))


def test_modules_of_the_venv_and_the_standard_library_are_accepted():
    check_task_module(LaunchOptions(custom_task_module="json.tool"))  # python -m json.tool
    check_task_module(LaunchOptions(custom_task_module="pytest"))  # a package with __main__
    check_task_module(LaunchOptions(custom_task_module="unittest"))
    check_task_module(LaunchOptions(custom_task_module="tfyarn_jupyter.container"))
    check_task_module(LaunchOptions())  # no custom module: nothing to check


def test_a_package_without_main_is_refused_as_python_m_would():
    with pytest.raises(SpecError) as exc:
        check_task_module(LaunchOptions(custom_task_module="email"))
    assert "a package without a __main__ module" in str(exc.value)


def test_a_module_only_the_notebooks_folder_holds_is_refused_until_it_is_shipped(
    notebook_folder,
):
    (notebook_folder / "my_task_7c2.py").write_text("print('task')\n")
    with pytest.raises(SpecError) as exc:
        check_task_module(LaunchOptions(custom_task_module="my_task_7c2"))
    message = str(exc.value)
    assert f"importable here from {notebook_folder / 'my_task_7c2.py'}" in message
    assert "which is not shipped" in message and "files={'my_task_7c2.py': PATH}" in message
    shipped = {"my_task_7c2.py": notebook_folder / "my_task_7c2.py"}
    check_task_module(LaunchOptions(custom_task_module="my_task_7c2", files=shipped))
    check_task_module(
        LaunchOptions(custom_task_module="my_task_7c2", source_roots={"nb": notebook_folder})
    )


def test_a_package_shipped_as_a_folder_provides_its_submodules(tmp_path):
    pkg = write_package(tmp_path / "src", "shipped_pkg_91d")
    files = {"shipped_pkg_91d": pkg}
    check_task_module(LaunchOptions(custom_task_module="shipped_pkg_91d.task", files=files))
    check_task_module(LaunchOptions(custom_task_module="shipped_pkg_91d", files=files))
    with pytest.raises(SpecError, match="is not in the environment"):
        check_task_module(LaunchOptions(custom_task_module="shipped_pkg_91d.nope", files=files))
    no_main = write_package(tmp_path / "src2", "shipped_pkg_91e", main=False)
    with pytest.raises(SpecError, match="without a __main__"):
        check_task_module(
            LaunchOptions(custom_task_module="shipped_pkg_91e", files={"shipped_pkg_91e": no_main})
        )


def test_the_check_runs_no_package_code_in_the_notebook(tmp_path):
    root = tmp_path / "roots"
    write_package(root, "explosive_pkg_3a0", init="raise RuntimeError('imported!')\n")
    opts = LaunchOptions(custom_task_module="explosive_pkg_3a0.task", source_roots={"r": root})
    check_task_module(opts)
    assert "explosive_pkg_3a0" not in sys.modules
    without_main = tmp_path / "other"
    write_package(without_main, "nomain_pkg_3a0", main=False)
    with pytest.raises(SpecError, match="without a __main__"):
        check_task_module(
            LaunchOptions(custom_task_module="nomain_pkg_3a0", source_roots={"r": without_main})
        )


@pytest.mark.parametrize(
    "extra",
    [
        {"pyenv_archive": "hdfs:///envs/e.tar"},  # built elsewhere: nothing to check against
        {"pip_packages": ["some-task-package"]},  # installed for the tasks only
        {"pre_script_hook": "pip install some-task-package"},
        {"env": {"PYTHONPATH": "/shared/libs"}},  # the nodes' own folders
    ],
)
def test_a_launch_that_adds_modules_the_client_cannot_see_is_not_refused(extra):
    check_task_module(LaunchOptions(custom_task_module="no_such_package_4f1c.task", **extra))


def test_a_module_of_a_distribution_left_out_of_the_layers_is_refused():
    assert task_modules.excluded_owner("mypy", ["mypy"]) == "mypy"  # installed in this venv
    with pytest.raises(SpecError) as exc:
        check_task_module(LaunchOptions(custom_task_module="mypy"))
    message = str(exc.value)
    assert "comes from mypy, which is left out of the shipped environment" in message
    assert "exclude_packages=" in message
    check_task_module(LaunchOptions(custom_task_module="mypy", exclude_packages=()))
    check_task_module(LaunchOptions(custom_task_module="mypy", layers=False))  # one tar: all


def test_prepare_refuses_before_anything_is_staged_uploaded_or_submitted(monkeypatch):
    from tfyarn_jupyter.run import skein_app

    def staged(*args, **kwargs):
        raise AssertionError("staged a launch whose task module cannot run")

    monkeypatch.setattr(skein_app, "_stage", staged)
    opts = LaunchOptions(custom_task_module="no_such_package_4f1c.task")
    with pytest.raises(SpecError, match="no_such_package_4f1c"):
        skein_app.prepare(lambda: None, {"chief": TaskSpec(512, 1)}, opts)
