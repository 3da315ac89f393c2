"""Hypothesis strategies for what a user types, shared by the spec and magic tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tfyarn_jupyter.core.spec import NodeLabel, TaskSpec

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
_gpus = st.one_of(
    st.just(""),
    _numbers.map(lambda n: f"/{n}"),
    st.sampled_from(["/", "/x", "/-1", "/0", "/2", "//1", "/1/1"]),
)
_labels = st.sampled_from(["", "@gpu", "@GPU", "@cpu", "@", "@gpu@gpu", "@gp\u0131"])

#: Strings near the ``MEM/VCORES[/GPUS][xN][@gpu]`` form, valid or slightly off.
near_specs = st.builds(
    lambda pad, mem, unit, slash, vc, gpus, inst, label: (
        f"{pad}{mem}{unit}{slash}{vc}{gpus}{inst}{label}{pad}"
    ),
    st.sampled_from(["", " ", "\t"]),
    _numbers,
    _units,
    st.sampled_from(["/", "/", "/", "", "//", ":"]),
    _numbers,
    _gpus,
    _instances,
    _labels,
)
spec_texts = st.one_of(st.text(max_size=30), near_specs)


def names_the_culprit(message: str, text: str) -> bool:
    return repr(text) in message or any(
        word in message for word in ("memory", "vcores", "instances", "label", "gpus")
    )


def check_valid_spec(spec: TaskSpec) -> None:
    assert isinstance(spec.memory, int) and spec.memory > 0
    assert isinstance(spec.vcores, int) and spec.vcores > 0
    assert isinstance(spec.instances, int) and spec.instances > 0
    assert isinstance(spec.label, NodeLabel)
    assert isinstance(spec.gpus, int) and not isinstance(spec.gpus, bool) and spec.gpus >= 0
    # Plain data and back, and the short form the magic prints and back.
    assert TaskSpec.from_dict(spec.to_dict()) == spec
    assert TaskSpec.parse(str(spec)) == spec
