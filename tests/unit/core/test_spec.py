"""Task resources and topologies: any input gives a valid value or a SpecError naming it.

Property-based where the input is typed by a user (:class:`TaskSpec` and its
short form); every field round-trips through ``to_dict``/``from_dict`` and the
short form.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tfyarn_jupyter.core.spec import (
    NodeLabel,
    SpecError,
    TaskSpec,
    parse_memory,
    task_names,
    validate_task_specs,
)

from ..strategies import check_valid_spec, names_the_culprit, near_specs, spec_texts


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
        assert names_the_culprit(str(exc), text), str(exc)
        return
    check_valid_spec(spec)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["512M", "1G", "2G", "1536", "1.5G"]),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=64),
    st.sampled_from(["", "@gpu", "@GPU"]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=16)),
)
def test_well_formed_short_forms_parse_to_what_they_say(
    mem: str, vcores: int, instances: int, label: str, gpus: int | None
) -> None:
    gpu_part = "" if gpus is None else f"/{gpus}"
    text = f"{mem}/{vcores}{gpu_part}x{instances}{label}"
    spec = TaskSpec.parse(text)
    assert spec.memory == parse_memory(mem)
    assert (spec.vcores, spec.instances, spec.gpus) == (vcores, instances, gpus or 0)
    assert spec.label is (NodeLabel.GPU if label else NodeLabel.CPU)
    check_valid_spec(spec)


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
@given(_any_value, _any_value, _any_value, _any_value, _any_value)
@example("1G", 1, 1, 5, 0)  # a non-string label (AttributeError before)
@example("1G", 1, 1, None, 0)
@example("1G", 1, 1, "", True)  # a bool is an int, but not a GPU count
def test_constructor_gives_a_valid_spec_or_a_spec_error_naming_the_field(
    memory: Any, vcores: Any, instances: Any, label: Any, gpus: Any
) -> None:
    try:
        spec = TaskSpec(memory, vcores, instances, label=label, gpus=gpus)
    except SpecError as exc:
        fields = ("memory", "vcores", "instances", "label", "gpus")
        assert any(w in str(exc) for w in fields), str(exc)
        return
    check_valid_spec(spec)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory": 1024, "vcores": 0}, "vcores must be positive"),
        ({"memory": 1024, "vcores": -2}, "vcores must be positive"),
        ({"memory": 1024, "vcores": 1, "instances": 0}, "instances must be positive"),
        ({"memory": 1024, "vcores": 1.5}, "vcores must be an int"),
        ({"memory": 1024, "vcores": True}, "vcores must be an int"),
        ({"memory": 0, "vcores": 1}, "memory must be positive"),
        ({"memory": "lots", "vcores": 1}, "is not a size"),
        ({"memory": 1024, "vcores": 1, "label": "tpu"}, "unknown node label"),
        ({"memory": 1024, "vcores": 1, "nb_proc_per_worker": 2}, "ask for more instances"),
        ({"memory": 1024, "vcores": 1, "nb_proc_per_worker": "gpu"}, "pass the node label as"),
        ({"memory": 1024, "vcores": 1, "tb_model_dir": 3}, "tb_model_dir must be a string"),
        ({"memory": 1024, "vcores": 1, "gpus": -1}, r"gpus must be >= 0 \(0: no GPU\), got -1"),
        ({"memory": 1024, "vcores": 1, "gpus": 1.0}, r"gpus must be a whole number.*got 1\.0"),
        ({"memory": 1024, "vcores": 1, "gpus": "2"}, r"gpus must be a whole number.*got '2'"),
        ({"memory": 1024, "vcores": 1, "gpus": True}, r"gpus must be a whole number.*got True"),
    ],
)
def test_bad_resources(kwargs, message):
    with pytest.raises(SpecError, match=message):
        TaskSpec(**kwargs)


def test_memory_units_and_short_form():
    assert TaskSpec("2G", 1).memory == 2048
    assert TaskSpec("512M", 1).memory == 512
    assert TaskSpec("1.5GiB", 1).memory == 1536
    spec = TaskSpec.parse("2G/4x8@gpu")
    assert (spec.memory, spec.vcores, spec.instances, spec.label) == (2048, 4, 8, NodeLabel.GPU)
    with pytest.raises(SpecError, match="MEMORY/VCORES"):
        TaskSpec.parse("2G")


def test_the_short_form_takes_a_gpu_count_between_vcores_and_instances():
    spec = TaskSpec.parse("8G/4/2x4@gpu")
    assert (spec.memory, spec.vcores, spec.gpus, spec.instances) == (8192, 4, 2, 4)
    assert spec.label is NodeLabel.GPU
    assert TaskSpec.parse("8G/4/1").gpus == 1
    assert TaskSpec.parse("8G/4").gpus == 0
    assert str(TaskSpec("8G", 4, 4, gpus=2)) == "8192M/4/2x4"


@pytest.mark.parametrize("text", ["8G/4/-1", "8G/4/x", "8G/4/", "8G/4/x4", "8G/4/1.5"])
def test_a_gpu_figure_that_is_not_a_whole_number_is_refused_naming_it(text):
    with pytest.raises(SpecError, match=r"gpus '.*' is not a whole number of GPUs >= 0") as err:
        TaskSpec.parse(text)
    assert repr(text) in str(err.value)


def test_gpus_is_keyword_only_so_tf_yarn_positional_calls_keep_their_meaning():
    with pytest.raises(TypeError):
        TaskSpec("1G", 1, 1, 1, NodeLabel.CPU, -1, None, None, 2)  # type: ignore[misc]
    assert TaskSpec("1G", 1, gpus=2).gpus == 2


@pytest.mark.parametrize(
    "spec",
    [TaskSpec(1024, 1), TaskSpec("2G", 4, 8, 1, NodeLabel.GPU), TaskSpec(512, 2, label="gpu"),
     TaskSpec("8G", 4, 4, gpus=2), TaskSpec("8G", 4, label="gpu", gpus=1)],
)  # fmt: skip
def test_every_field_round_trips_through_plain_data_and_the_short_form(spec):
    d = spec.to_dict()
    expected = {"memory": spec.memory, "vcores": spec.vcores, "instances": spec.instances,
                "label": spec.label.value}  # fmt: skip
    if spec.gpus:  # left out at 0, so a reader that predates gpus sees tf-yarn's fields only
        expected["gpus"] = spec.gpus
    assert d == expected
    assert TaskSpec.from_dict(d) == spec
    assert TaskSpec.parse(str(spec)) == spec


def test_tf_yarn_fields_round_trip_in_tf_yarn_positional_order():
    spec = TaskSpec("2 GiB", 4, 2, 1, NodeLabel.GPU, 30, "hdfs:///m", "--port 0", gpus=3)
    assert (spec.instances, spec.nb_proc_per_worker, spec.label) == (2, 1, NodeLabel.GPU)
    assert (spec.tb_termination_timeout_seconds, spec.tb_model_dir, spec.tb_extra_args) == (
        30, "hdfs:///m", "--port 0")  # fmt: skip
    assert spec.gpus == 3
    assert TaskSpec.from_dict(spec.to_dict()) == spec
    assert [f.name for f in dataclasses.fields(TaskSpec)][-1] == "gpus"
    for field in dataclasses.fields(TaskSpec):
        assert getattr(TaskSpec.from_dict(spec.to_dict()), field.name) == getattr(spec, field.name)


def test_from_dict_names_unknown_fields():
    with pytest.raises(SpecError, match=r"unknown TaskSpec field.*tpus"):
        TaskSpec.from_dict({"memory": 1, "vcores": 1, "tpus": 1})


def test_a_tensorboard_task_asking_for_gpus_is_refused():
    with pytest.raises(SpecError, match="tensorboard task reads event files and uses no GPU"):
        validate_task_specs({"chief": TaskSpec(1, 1), "tensorboard": TaskSpec(1, 1, gpus=1)})
    specs = validate_task_specs({"chief": TaskSpec(1, 1, gpus=2), "tensorboard": TaskSpec(1, 1)})
    assert specs["chief"].gpus == 2


def test_topology_comes_back_in_panel_order_with_one_name_per_instance():
    specs = validate_task_specs(
        {"evaluator": TaskSpec(1, 1), "ps": TaskSpec(1, 1), "worker": TaskSpec(1, 1, 2),
         "chief": TaskSpec(1, 1)}
    )  # fmt: skip
    assert list(specs) == ["chief", "worker", "ps", "evaluator"]
    assert task_names(specs) == ["chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"]
