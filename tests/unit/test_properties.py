"""Property-based tests of what a user types: the ``%%tfyarn`` line and task resources.

Any input gives either a valid value or the documented error naming the
culprit (:class:`~IPython.core.error.UsageError` from the magic's parser,
:class:`~tfyarn_jupyter.spec.SpecError` from :class:`TaskSpec`), never
another exception; valid values round-trip.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from tfyarn_jupyter.magic import LaunchArgs, parse_launch
from tfyarn_jupyter.spec import TASK_TYPES, NodeLabel, SpecError, TaskSpec, parse_memory

# Characters that look like what the forms take but are not ASCII: a Kelvin
# sign matches "k" case-insensitively, superscripts pass str.isdigit(), and
# Arabic-Indic digits match \d.
_LOOKALIKES = ["\u212a", "\u00b2", "\u0661", "\uff11", "\u0130", "\u017f"]

_numbers = st.one_of(
    st.integers(min_value=-3, max_value=10**6).map(str),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
    st.integers(min_value=300, max_value=5000).map(lambda n: "9" * n),  # overflow / int limit
    st.sampled_from(["", "0", "00", ".5", "1.", "1e3", "-1", *_LOOKALIKES]),
    st.text(alphabet="0123456789.", min_size=1, max_size=6),
)
_units = st.sampled_from(
    [
        "",
        "K",
        "M",
        "G",
        "T",
        "k",
        "m",
        "g",
        "t",
        "Ki",
        "MiB",
        "GB",
        "gib",
        "B",
        "i",
        "X",
        " G",
        "G ",
        *_LOOKALIKES,
    ]
)
_instances = st.one_of(
    st.just(""),
    _numbers.map(lambda n: f"x{n}"),
    st.sampled_from(["x", "X2", "x0", "*2", "x\u00b2"]),
)
_labels = st.sampled_from(["", "@gpu", "@GPU", "@cpu", "@", "@gpu@gpu", "@gp\u0131"])

#: Strings near the ``MEM/VCORES[xN][@gpu]`` form, valid or slightly off.
near_specs = st.builds(
    lambda pad, mem, unit, slash, vc, inst, label: f"{pad}{mem}{unit}{slash}{vc}{inst}{label}{pad}",
    st.sampled_from(["", " ", "\t"]),
    _numbers,
    _units,
    st.sampled_from(["/", "/", "/", "", "//", ":"]),
    _numbers,
    _instances,
    _labels,
)
spec_texts = st.one_of(st.text(max_size=30), near_specs)


def _names_the_culprit(message: str, text: str) -> bool:
    return repr(text) in message or any(
        word in message for word in ("memory", "vcores", "instances", "label")
    )


def _check_valid_spec(spec: TaskSpec) -> None:
    assert isinstance(spec.memory, int) and spec.memory > 0
    assert isinstance(spec.vcores, int) and spec.vcores > 0
    assert isinstance(spec.instances, int) and spec.instances > 0
    assert isinstance(spec.label, NodeLabel)
    # Plain data and back, and the short form the magic prints and back.
    assert TaskSpec.from_dict(spec.to_dict()) == spec
    assert TaskSpec.parse(str(spec)) == spec


# -- TaskSpec.parse ------------------------------------------------------------------------
@settings(max_examples=600, deadline=None)
@given(spec_texts)
@example("1\u212a/1")  # Kelvin sign: matched "k" but had no unit entry (KeyError)
@example("9" * 400 + "G/1")  # float overflow (OverflowError)
@example("1G/" + "1" * 5000)  # beyond int()'s digit limit (ValueError)
def test_parse_gives_a_valid_spec_or_a_spec_error_naming_the_value(text: str) -> None:
    try:
        spec = TaskSpec.parse(text)
    except SpecError as exc:
        assert _names_the_culprit(str(exc), text), str(exc)
        return
    _check_valid_spec(spec)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["512M", "1G", "2G", "1536", "1.5G"]),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=64),
    st.sampled_from(["", "@gpu", "@GPU"]),
)
def test_well_formed_short_forms_parse_to_what_they_say(
    mem: str, vcores: int, instances: int, label: str
) -> None:
    text = f"{mem}/{vcores}x{instances}{label}"
    spec = TaskSpec.parse(text)
    assert spec.memory == parse_memory(mem)
    assert (spec.vcores, spec.instances) == (vcores, instances)
    assert spec.label is (NodeLabel.GPU if label else NodeLabel.CPU)
    _check_valid_spec(spec)


# -- TaskSpec(...) ----------------------------------------------------------------------------
_any_value = st.one_of(
    st.integers(min_value=-5, max_value=10**12),
    st.text(max_size=12),
    near_specs,
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.sampled_from([NodeLabel.CPU, NodeLabel.GPU, "gpu", "GPU", "cpu", "", b"gpu", 1, []]),
)


@settings(max_examples=600, deadline=None)
@given(_any_value, _any_value, _any_value, _any_value)
@example("1G", 1, 1, 5)  # a non-string label (AttributeError before)
@example("1G", 1, 1, None)
def test_constructor_gives_a_valid_spec_or_a_spec_error_naming_the_field(
    memory: Any, vcores: Any, instances: Any, label: Any
) -> None:
    try:
        spec = TaskSpec(memory, vcores, instances, label)
    except SpecError as exc:
        assert any(w in str(exc) for w in ("memory", "vcores", "instances", "label")), str(exc)
        return
    _check_valid_spec(spec)


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
        _check_valid_spec(spec)
    assert args.nb_retries >= 0
    assert not (args.wait and args.detach)


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
        assert re.search(r"--(chief|worker|ps|evaluator|gpu)\b", str(exc)), str(exc)
        return
    for ttype, (mem, vcores, n) in topology.items():
        spec = args.task_specs[ttype]
        assert (spec.memory, spec.vcores, spec.instances) == (parse_memory(mem), vcores, n)
        assert spec.label is (NodeLabel.GPU if ttype in gpu else NodeLabel.CPU)
    # The chief default fills in when the line names none.
    assert "chief" in args.task_specs
