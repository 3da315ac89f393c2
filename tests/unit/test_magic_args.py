"""The %%tfyarn line: every accepted form, every malformed one, and no other exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from tfyarn_jupyter.magic import LaunchArgs, local_module_roots, parse_launch
from tfyarn_jupyter.spec import NodeLabel


def test_the_issue_example_parses_exactly_as_written():
    args = parse_launch("--chief 2G/4 --evaluator 1G/1 --queue ml-gpu")
    assert args.queue == "ml-gpu"
    assert args.task_specs["chief"].memory == 2048
    assert args.task_specs["chief"].vcores == 4
    assert args.task_specs["evaluator"].memory == 1024
    assert list(args.task_specs) == ["chief", "evaluator"]


def test_chief_defaults_when_not_given():
    args = parse_launch("--evaluator 1G/1")
    assert args.task_specs["chief"].memory == 1024


def test_workers_and_ps_take_an_instance_count():
    args = parse_launch("--worker 2G/4x8 --ps 512M/1x2")
    assert args.task_specs["worker"].instances == 8
    assert args.task_specs["worker"].memory == 2048
    assert args.task_specs["ps"].instances == 2
    assert args.task_specs["ps"].memory == 512


def test_gpu_option_labels_only_the_named_types():
    args = parse_launch("--worker 1G/1x2 --ps 1G/1 --gpu chief,worker --queue ml-gpu")
    assert args.task_specs["chief"].label is NodeLabel.GPU
    assert args.task_specs["worker"].label is NodeLabel.GPU
    assert args.task_specs["ps"].label is NodeLabel.CPU


def test_repeatable_options_accumulate():
    args = parse_launch(
        "--pip six --pip attrs==23.1 --env A=1 --env B=x=y --file-system hdfs://nn2:8020 "
        "--retries 2 --fn train --name exp1 --var r --detach --archive hdfs:///envs/e.tar"
    )
    assert args.pip_packages == ["six", "attrs==23.1"]
    assert args.env == {"A": "1", "B": "x=y"}
    assert args.file_systems == ["hdfs://nn2:8020"]
    assert (args.nb_retries, args.fn, args.name, args.var) == (2, "train", "exp1", "r")
    assert args.detach and not args.wait
    assert args.archive == "hdfs:///envs/e.tar"


def test_file_takes_an_optional_target(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n")
    args = parse_launch(f"--file {src} --file {src}:other.py")
    assert args.files == {"mod.py": str(src), "other.py": str(src)}


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("--chief 2X/4", "--chief"),
        ("--chief 0G/1", "--chief"),
        ("--worker x-3 --ps 1G/1", "--worker"),
        ("--worker 2G/4x8", "--ps"),
        ("--evaluator 1G/1x2", "--evaluator"),
        ("--chief 1G/1x2", "--chief"),
        ("--gpu chief,gpuworker", "--gpu"),
        ("--gpu worker", "--gpu"),
        ("--retries two", "--retries"),
        ("--env NOEQUALS", "--env"),
        ("--env 1A=2", "--env"),
        ("--var 1x", "--var"),
        ("--fn not-a-name", "--fn"),
        ("--file /does/not/exist.py", "--file"),
        ("--wait --detach", "--wait"),
        ("--bogus 1", "unrecognized"),
        ("--chief", "--chief"),
        ("--chief '2G/4", "cannot split"),
    ],
)
def test_malformed_values_are_usage_errors_naming_the_argument(line, names):
    with pytest.raises(UsageError) as err:
        parse_launch(line)
    assert names in str(err.value)
    assert str(err.value).startswith("%%tfyarn")


_tokens = st.sampled_from(
    ["--chief", "--worker", "--ps", "--evaluator", "--gpu", "--queue", "--retries", "--env",
     "--pip", "--var", "--fn", "--wait", "--detach", "2G/4", "1G/1x2", "0G/1", "x-3", "chief",
     "A=1", "@gpu", "512M/1@gpu", "'", "--", "-h"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(_tokens, max_size=8).map(" ".join)))
def test_any_line_gives_a_launch_or_a_usage_error(line):
    try:
        out = parse_launch(line)
    except UsageError:
        return
    assert isinstance(out, LaunchArgs)
    assert "chief" in out.task_specs


def test_local_module_roots_picks_modules_under_the_notebook_folder_only(tmp_path):
    import types

    nb = tmp_path / "nb"
    (nb / "pkg").mkdir(parents=True)
    (nb / "helper.py").write_text("")
    (nb / "pkg" / "__init__.py").write_text("")
    mods = {
        "helper": types.SimpleNamespace(__file__=str(nb / "helper.py")),
        "pkg": types.SimpleNamespace(__file__=str(nb / "pkg" / "__init__.py")),
        "pkg.sub": types.SimpleNamespace(__file__=str(nb / "pkg" / "sub.py")),
        "json": __import__("json"),
        "elsewhere": types.SimpleNamespace(__file__=str(tmp_path / "other.py")),
    }
    roots = local_module_roots(nb, mods)
    assert list(roots.values()) == [nb.resolve()]
    assert local_module_roots(tmp_path / "empty", mods) == {}
