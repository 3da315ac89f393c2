"""The %%tfyarn line: every accepted form, every malformed one, and no other exception."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from tfyarn_jupyter.core.spec import TASK_TYPES, NodeLabel, parse_memory
from tfyarn_jupyter.magic.arguments import LaunchArgs, launch_help, parse_launch
from tfyarn_jupyter.magic.extension import local_module_roots

from ..strategies import check_valid_spec, near_specs


def test_the_issue_example_parses_exactly_as_written():
    args = parse_launch("--chief 2G/4 --evaluator 1G/1 --queue ml-gpu")
    assert args.options.queue == "ml-gpu"
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


def test_workers_without_a_ps_parse_for_all_reduce_training():
    args = parse_launch("--worker 2G/4x2")
    assert list(args.task_specs) == ["chief", "worker"]
    assert args.task_specs["worker"].instances == 2


def test_gpu_option_labels_only_the_named_types():
    args = parse_launch("--worker 1G/1x2 --ps 1G/1 --gpu chief,worker --queue ml-gpu")
    assert args.task_specs["chief"].label is NodeLabel.GPU
    assert args.task_specs["worker"].label is NodeLabel.GPU
    assert args.task_specs["ps"].label is NodeLabel.CPU


def test_a_third_figure_asks_each_task_for_that_many_gpus():
    args = parse_launch("--chief 8G/4/1 --worker 8G/4/2x4 --ps 1G/1x2")
    chief, worker, ps = (args.task_specs[t] for t in ("chief", "worker", "ps"))
    assert (chief.memory, chief.vcores, chief.gpus, chief.instances) == (8192, 4, 1, 1)
    assert (worker.memory, worker.vcores, worker.gpus, worker.instances) == (8192, 4, 2, 4)
    assert ps.gpus == 0
    assert chief.label is NodeLabel.CPU


def test_gpu_counts_combine_with_the_gpu_node_label():
    args = parse_launch("--chief 8G/4/1 --worker 8G/4/2x2 --gpu chief,worker --queue ml-gpu")
    assert [(s.label, s.gpus) for s in args.task_specs.values()] == [
        (NodeLabel.GPU, 1), (NodeLabel.GPU, 2)]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "flag", "figure"),
    [
        ("--chief 8G/4/-1", "--chief", "'-1'"),
        ("--chief 8G/4/x", "--chief", "'x'"),
        ("--worker 8G/4/x4", "--worker", "''"),
        ("--worker 8G/4/1.5x2", "--worker", "'1.5'"),
        ("--tensorboard 1G/1/1", "--tensorboard", "gpus=1"),
    ],
)
def test_a_bad_gpu_figure_is_a_usage_error_naming_the_flag_and_the_figure(line, flag, figure):
    with pytest.raises(UsageError) as err:
        parse_launch(line)
    text = str(err.value)
    assert text.startswith(f"%%tfyarn {flag}") and "gpus" in text and figure in text, text


def test_the_help_shows_the_gpu_figure():
    assert "MEM/VCORES[/GPUS][xN]" in launch_help()
    assert "8G/4/1x4" in launch_help()


def test_repeatable_options_accumulate():
    args = parse_launch(
        "--pip six --pip attrs==23.1 --env A=1 --env B=x=y --file-system hdfs://nn2:8020 "
        "--retries 2 --fn train --name exp1 --var r --detach --archive hdfs:///envs/e.tar"
    )
    opts = args.options
    assert opts.pip_packages == ("six", "attrs==23.1")
    assert opts.env == {"A": "1", "B": "x=y"}
    assert opts.file_systems == ("hdfs://nn2:8020",)
    assert (opts.nb_retries, args.fn, opts.name, args.var) == (2, "train", "exp1", "r")
    assert opts.detach and not args.wait
    assert opts.pyenv_archive == "hdfs:///envs/e.tar"


def test_file_takes_an_optional_target(tmp_path):
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n")
    args = parse_launch(f"--file {src} --file {src}:other.py")
    assert args.options.files == {"mod.py": Path(src), "other.py": Path(src)}


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("--chief 2X/4", "--chief"),
        ("--chief 0G/1", "--chief"),
        ("--worker x-3 --ps 1G/1", "--worker"),
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
     "A=1", "@gpu", "512M/1@gpu", "8G/4/1", "1G/1/2x2", "1G/1/-1", "'", "--", "-h"]
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


# -- the %%tfyarn line --------------------------------------------------------------------
_flags = [
    "--chief",
    "--worker",
    "--ps",
    "--evaluator",
    "--gpu",
    "--queue",
    "--name",
    "--retries",
    "--env",
    "--pip",
    "--var",
    "--fn",
    "--file",
    "--file-system",
    "--archive",
    "--wait",
    "--detach",
    "--bogus",
    "-h",
    "--help",
    "--",
]
_values = st.one_of(
    near_specs,
    st.sampled_from(
        [
            "1G/1",
            "512M/1x2",
            "chief",
            "chief,worker",
            "worker,ps",
            "gpu",
            "A=1",
            "1A=2",
            "=",
            "x",
            "3",
            "\u00b2",
            "-1",
            "9" * 5000,
            "~nosuchuser/x.py",
            "/nonexistent",
            "'",
            '"',
            "ml-gpu",
            "",
            "''",
        ]
    ),
    st.text(max_size=10).map(lambda s: repr(s)),
)
_lines = st.lists(
    st.one_of(
        st.sampled_from(_flags),
        _values,
        st.tuples(st.sampled_from(_flags), _values).map(
            lambda fv: f"{fv[0]}={fv[1]}" if fv[0].startswith("--") else " ".join(fv)
        ),
    ),
    max_size=10,
).map(" ".join)

_FLAG = re.compile(r"--[a-z-]+|%%tfyarn:")


@settings(max_examples=800, deadline=None)
@given(st.one_of(st.text(max_size=60), _lines))
@example("--retries \u00b2")  # isdigit() but not int() (ValueError before)
@example("--retries " + "9" * 5000)  # beyond int()'s digit limit
@example("--chief 1G/" + "1" * 5000)
@example("--file ~nosuchuser/x.py")  # expanduser() raised RuntimeError
@example("--file=" + "9" * 5000)  # exists() raised OSError: file name too long
def test_any_line_gives_launch_args_or_a_usage_error_naming_the_argument(line: str) -> None:
    try:
        args = parse_launch(line)
    except UsageError as exc:
        message = str(exc)
        assert message.startswith("%%tfyarn"), message
        assert _FLAG.search(message), message  # an option, or the whole line, is named
        return
    assert isinstance(args, LaunchArgs)
    assert "chief" in args.task_specs
    assert list(args.task_specs) == [t for t in TASK_TYPES if t in args.task_specs]
    for spec in args.task_specs.values():
        check_valid_spec(spec)
    assert args.options.nb_retries >= 0
    assert not (args.wait and args.options.detach)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(TASK_TYPES),
        st.tuples(st.sampled_from(["512M", "1G", "2G"]), st.integers(1, 8), st.integers(1, 4)),
        min_size=1,
    ),
    st.sets(st.sampled_from(TASK_TYPES)),
)
def test_structured_topologies_parse_or_name_the_offending_task_type(
    topology: dict[str, tuple[str, int, int]], gpu: set[str]
) -> None:
    parts = [f"--{t} {m}/{v}x{n}" for t, (m, v, n) in topology.items()]
    if gpu:
        parts.append("--gpu " + ",".join(sorted(gpu)))
    line = " ".join(parts)
    try:
        args = parse_launch(line)
    except UsageError as exc:
        assert re.search(r"--(chief|worker|ps|evaluator|tensorboard|gpu)\b", str(exc)), str(exc)
        return
    for ttype, (mem, vcores, n) in topology.items():
        spec = args.task_specs[ttype]
        assert (spec.memory, spec.vcores, spec.instances) == (parse_memory(mem), vcores, n)
        assert spec.label is (NodeLabel.GPU if ttype in gpu else NodeLabel.CPU)
    # The chief default fills in when the line names none.
    assert "chief" in args.task_specs


def test_function_flag_runs_the_cell_function_in_every_task():
    assert parse_launch("--worker 1G/1x2 --function").options.mode == "function"
    assert parse_launch("--worker 1G/1x2").options.mode == "experiment"


# -- one output per launch cell ---------------------------------------------------------------
def test_the_panels_display_bundle_carries_the_static_summary_beside_the_widget_view():
    import types

    from tfyarn_jupyter.core.state import AppInfo, RunStatus, TaskState
    from tfyarn_jupyter.panel.widget import RunPanel

    run = types.SimpleNamespace(app_id="application_1_0007", last_status=None,
                                advance=lambda: None)  # fmt: skip
    panel = RunPanel(run, start=False)  # type: ignore[arg-type]
    try:
        bundle, _ = panel._repr_mimebundle_()
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.model_id
        assert "application_1_0007</code> submitted" in bundle["text/html"]
        app = AppInfo("application_1_0007", state="FINISHED", final_status="SUCCEEDED")
        task = TaskState("chief:0", "chief", 0, "succeeded", allocated_time=1000.0,
                         end_time=43500.0)  # fmt: skip
        run.last_status = RunStatus(app, [task], [], [], None)
        bundle, _ = panel._repr_mimebundle_()
        assert "FINISHED/SUCCEEDED" in bundle["text/html"]
        assert "42.5s" in bundle["text/html"]  # the duration the summary and result agree on
        assert bundle["text/plain"] == "tfyarn run application_1_0007"
    finally:
        panel.close()


def test_layers_flags_set_the_layered_environment_options():
    args = parse_launch("--layers --exclude-package mypy --exclude-package ruff "
                        "--shared-layer-cache /shared/layers")  # fmt: skip
    assert args.options.layers is True
    assert args.options.exclude_packages == ("mypy", "ruff")
    assert args.options.shared_layer_cache == "/shared/layers"
    assert parse_launch("--no-layers").options.layers is False
    assert parse_launch("").options.layers is True  # layers are the default
    assert parse_launch("--exclude-package mypy").options.exclude_packages == ("mypy",)
    assert parse_launch("--layer-codec zstd").options.layer_codec == "zstd"
    assert parse_launch("").options.layer_codec is None  # plain tars are the default


@pytest.mark.parametrize(
    "line",
    [
        "--no-layers --exclude-package mypy",
        "--no-layers --shared-layer-cache /shared/layers",
        "--no-layers --layer-codec zstd",
    ],
)
def test_layer_shaping_flags_with_no_layers_are_usage_errors(line):
    with pytest.raises(UsageError, match="drop --no-layers"):
        parse_launch(line)


def test_a_relative_shared_layer_cache_is_a_usage_error():
    with pytest.raises(UsageError, match="shared_layer_cache must be an absolute"):
        parse_launch("--layers --shared-layer-cache shared/layers")


def test_a_layer_codec_other_than_zstd_is_a_usage_error_naming_the_choices():
    with pytest.raises(UsageError, match=r"invalid choice: 'gzip'.*zstd"):
        parse_launch("--layer-codec gzip")


def test_the_help_lists_every_flag_of_the_launch_line():
    text = launch_help()
    flags = ["--chief", "--worker", "--evaluator", "--gpu", "--queue", "--pip", "--layers",
             "--no-layers", "--exclude-package", "--shared-layer-cache", "--layer-codec",
             "--mlflow"]  # fmt: skip
    for flag in flags:
        assert flag in text, flag
