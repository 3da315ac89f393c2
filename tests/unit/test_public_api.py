"""The package's public names: every one in ``__all__`` resolves, whether imported eagerly
or on first use, and ``dir()`` lists them (what IPython's completion offers)."""

from __future__ import annotations

import pytest

import tfyarn_jupyter


@pytest.mark.parametrize("name", tfyarn_jupyter.__all__)
def test_every_public_name_resolves_and_is_listed(name):
    assert getattr(tfyarn_jupyter, name) is not None
    assert name in dir(tfyarn_jupyter)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="no_such_name"):
        tfyarn_jupyter.no_such_name  # noqa: B018


def test_star_import_gives_the_lazy_names_too():
    namespace: dict[str, object] = {}
    exec("from tfyarn_jupyter import *", namespace)
    assert namespace["run_on_yarn"] is tfyarn_jupyter.run_on_yarn
    assert namespace["TaskSpec"] is tfyarn_jupyter.TaskSpec


def test_the_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert tfyarn_jupyter.__version__ == version("tfyarn_jupyter")


def test_importing_the_package_loads_none_of_the_launching_side(fresh_python):
    # Every task's container imports the package (its entry point lives in it), as does the
    # client's unpickling check: the launching side's modules would cost each 0.2 CPU-s.
    code = (
        "import sys, tfyarn_jupyter.container.main\n"
        "from tfyarn_jupyter import Experiment, KerasExperiment, TaskSpec\n"
        "client = ('skein', 'requests', 'importlib.metadata', 'tfyarn_jupyter.run.launch',\n"
        "          'tfyarn_jupyter.hadoop.resourcemanager')\n"
        "loaded = [m for m in client if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    fresh_python(code)
