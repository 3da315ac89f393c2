"""Layers of a venv (keys, plan, exclusions, import check) and the interpreter's layer."""

from __future__ import annotations

import base64
import hashlib
import os
import random
import sys
from pathlib import Path

import pytest

from tfyarn_jupyter.core import program
from tfyarn_jupyter.ship import interpreter, layers
from tfyarn_jupyter.ship.layers import LayerError

SITE = "lib/python3.11/site-packages"


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def install(prefix: Path, dist: str, files: dict[str, bytes], direct_url: bool = False) -> Path:
    """A fake installed distribution: its files and a RECORD listing them with hashes."""
    site = prefix / SITE
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        rows.append(f"{rel},{_hash(data)},{len(data)}")
    if direct_url:
        (info / "direct_url.json").write_text('{"url": "file:///tmp/x.whl"}')
        rows.append(f"{info.name}/direct_url.json,,")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /opt/python/bin\n")
    (prefix / "bin" / "python").symlink_to("/opt/python/bin/python3.11")
    install(prefix, "alpha", {"alpha/__init__.py": b"A = 1\n", "alpha/core.py": b"x = 2\n"})
    install(prefix, "beta_pkg", {"beta/__init__.py": b"B = 1\n", "beta_mod.py": b"y = 1\n"})
    install(prefix, "notebook", {"notebook/__init__.py": b"N = 1\n"})
    return prefix


def by_name(plan: layers.Plan) -> dict[str, layers.Layer]:
    return {layer.name: layer for layer in plan.layers}


def test_plan_has_a_layer_per_distribution_and_a_base(venv: Path) -> None:
    plan = layers.plan(venv, SITE, group_below=0)
    got = by_name(plan)
    assert set(got) == {"base", "alpha", "beta-pkg"}
    assert list(plan.excluded) == ["notebook"]
    record = venv / SITE / "notebook-1.0.dist-info" / "RECORD"
    assert plan.excluded["notebook"] == len(b"N = 1\n") + record.stat().st_size
    assert f"{SITE}/alpha/core.py" in got["alpha"].files
    assert got["beta-pkg"].modules == {"beta", "beta_mod"}
    assert set(got["base"].files) == {"pyvenv.cfg", "bin/python"}


def test_key_is_stable_under_reordering_of_record(venv: Path) -> None:
    before = by_name(layers.plan(venv, SITE, group_below=0))["alpha"].key
    record = venv / SITE / "alpha-1.0.dist-info" / "RECORD"
    lines = record.read_text().splitlines()
    random.Random(1).shuffle(lines)
    record.write_text("\n".join(reversed(lines)) + "\n")
    assert by_name(layers.plan(venv, SITE, group_below=0))["alpha"].key == before


def test_key_changes_with_an_upgrade_and_with_a_file_change(venv: Path) -> None:
    plan = by_name(layers.plan(venv, SITE, group_below=0))
    install(venv, "alpha", {"alpha/__init__.py": b"A = 2\n", "alpha/core.py": b"x = 2\n"})
    upgraded = by_name(layers.plan(venv, SITE, group_below=0))
    assert upgraded["alpha"].key != plan["alpha"].key
    assert upgraded["beta-pkg"].key == plan["beta-pkg"].key
    (venv / SITE / "beta_mod.py").write_bytes(b"y = 1000\n")  # edited in place, same RECORD
    assert by_name(layers.plan(venv, SITE, group_below=0))["beta-pkg"].key != plan["beta-pkg"].key


def test_base_key_follows_its_content_and_ignores_runtime_bytecode(venv: Path) -> None:
    base = by_name(layers.plan(venv, SITE, group_below=0))["base"].key
    cache = venv / SITE / "alpha" / "__pycache__"
    cache.mkdir()
    (cache / "core.cpython-311.pyc").write_bytes(b"compiled")
    assert by_name(layers.plan(venv, SITE, group_below=0))["base"].key == base
    (venv / "pyvenv.cfg").write_text("home = /elsewhere/bin\n")
    assert by_name(layers.plan(venv, SITE, group_below=0))["base"].key != base


def test_environment_key_is_order_free_and_follows_layers(venv: Path) -> None:
    plan = layers.plan(venv, SITE, group_below=0)
    reordered = layers.Plan(plan.prefix, tuple(reversed(plan.layers)), plan.left_out)
    assert reordered.key == plan.key
    install(venv, "gamma", {"gamma.py": b"g = 1\n"})
    assert layers.plan(venv, SITE, group_below=0).key != plan.key


def test_local_wheels_are_not_shareable(venv: Path) -> None:
    install(venv, "mine", {"mine.py": b"secret = 1\n"}, direct_url=True)
    got = by_name(layers.plan(venv, SITE, group_below=0))
    assert got["alpha"].shareable and not got["mine"].shareable and not got["base"].shareable


def test_exclusion_list_is_normalised_and_optional(venv: Path) -> None:
    assert "notebook" in by_name(layers.plan(venv, SITE, group_below=0, exclude=()))
    assert "beta-pkg" not in by_name(layers.plan(venv, SITE, group_below=0, exclude=["Beta.Pkg"]))


def test_import_check_refuses_what_only_a_left_out_package_provides(venv: Path) -> None:
    plan = layers.plan(venv, SITE, group_below=0)
    layers.check_imports({"alpha", "numpy", "os"}, plan)  # shipped or not ours to judge
    with pytest.raises(LayerError, match=r"notebook.*exclude_packages"):
        layers.check_imports({"alpha", "notebook"}, plan)


def small_dists(venv: Path, n: int) -> list[str]:
    names = [f"small{i}" for i in range(n)]
    for name in names:
        install(venv, name, {f"{name}.py": f"{name} = 1\n".encode()})
    return names


def test_small_distributions_share_few_group_layers_and_large_ones_stay_alone(venv: Path) -> None:
    install(venv, "big", {"big/__init__.py": b"x" * 5000})
    small_dists(venv, 20)
    plan = layers.plan(venv, SITE, group_below=1000, groups=3)
    kinds = sorted(layer.kind for layer in plan.layers)
    assert kinds == ["base", "dist", "group", "group", "group"], kinds
    got = by_name(plan)
    assert got["big"].kind == "dist" and not got["big"].members
    members = sorted(m for layer in plan.layers for m in layer.members)
    assert members == sorted(["alpha", "beta-pkg", *(f"small{i}" for i in range(20))])
    for layer in plan.layers:
        if layer.kind == "group":
            assert layer.shareable and layer.name == f"group-{layers.group_of(layer.members[0], 3)}"
            assert {layers.group_of(m, 3) for m in layer.members} == {int(layer.name[-1])}
    shipped = {m for layer in plan.layers for m in layer.modules}
    assert {"alpha", "beta", "beta_mod", "small7", "big"} <= shipped
    files = [f for layer in plan.layers for f in layer.files]
    assert len(files) == len(set(files)), "a file in two layers"


def test_changing_one_small_package_changes_only_its_group(venv: Path) -> None:
    def keys() -> dict[str, str]:
        plan = layers.plan(venv, SITE, group_below=1000, groups=3)
        return {layer.name: layer.key for layer in plan.layers}

    small_dists(venv, 20)
    before = keys()
    install(venv, "small5", {"small5.py": b"small5 = 2\n"})
    after = keys()
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {f"group-{layers.group_of('small5', 3)}"}, changed


def test_a_local_wheel_is_never_grouped(venv: Path) -> None:
    install(venv, "mine", {"mine.py": b"secret = 1\n"}, direct_url=True)
    got = by_name(layers.plan(venv, SITE, group_below=10**6, groups=1))
    assert got["mine"].kind == "dist" and not got["mine"].shareable
    assert got["group-0"].members == ("alpha", "beta-pkg")


def test_a_layer_over_the_part_size_is_split_into_even_parts_holding_each_file_once(
    venv: Path,
) -> None:
    big = {f"big/f{i}.bin": bytes([i]) * (1000 + 100 * i) for i in range(9)}
    install(venv, "big", {**big, "big/huge.so": b"h" * 9000, "big/__init__.py": b""})
    whole = by_name(layers.plan(venv, SITE, group_below=0, part_size=0))["big"]
    parts = [lay for lay in layers.plan(venv, SITE, group_below=0, part_size=9000).layers
             if lay.name == "big"]  # fmt: skip
    assert len(parts) == -(-whole.size // 9000) == 3
    assert [p.part for p in parts] == ["1/3", "2/3", "3/3"]
    assert sorted(f for p in parts for f in p.files) == sorted(whole.files)
    assert sum(p.size for p in parts) == whole.size
    # The largest file alone fills a part; the others share the rest evenly.
    assert parts[0].files == ("lib/python3.11/site-packages/big/huge.so",)
    assert abs(parts[1].size - parts[2].size) <= 1800, [p.size for p in parts]
    assert len({p.key for p in parts} | {whole.key}) == 4
    assert all(p.modules == whole.modules and p.shareable for p in parts)
    names = [p.archive_name for p in parts]
    assert len(set(names)) == 3 and all(n.startswith("L-") and n.endswith(".tar") for n in names)
    smaller = [lay for lay in layers.plan(venv, SITE, group_below=0, part_size=9000).layers
               if lay.name != "big"]  # fmt: skip
    assert all(not lay.part for lay in smaller), "only layers over the part size are split"


def test_the_parts_of_a_split_layer_are_the_same_each_time_and_move_together(venv: Path) -> None:
    install(venv, "big", {f"big/f{i}.bin": b"x" * (500 * (i % 4 + 1)) for i in range(30)})

    def keys() -> dict[str, tuple[str, tuple[str, ...]]]:
        plan = layers.plan(venv, SITE, group_below=0, part_size=8000)
        return {f"{lay.name} {lay.part}": (lay.key, lay.files) for lay in plan.layers}

    first, again = keys(), keys()
    assert first == again and sum(1 for k in first if k.startswith("big ")) == 5
    install(venv, "big", {f"big/f{i}.bin": b"y" * (500 * (i % 4 + 1)) for i in range(30)})
    after = keys()
    moved = {k for k in first if first[k][0] != after[k][0]}
    assert moved == {k for k in first if k.startswith("big ")}, moved


def test_report_names_a_part_by_its_place(venv: Path) -> None:
    install(venv, "big", {f"big/f{i}.bin": b"x" * 4000 for i in range(4)})
    rows = layers.report_rows(layers.plan(venv, SITE, group_below=0, part_size=9000))
    assert sorted(r[0] for r in rows if r[0].startswith("big")) == [
        "big (part 1 of 2)", "big (part 2 of 2)"]  # fmt: skip


def test_report_names_a_group_by_its_members(venv: Path) -> None:
    small_dists(venv, 6)
    rows = layers.report_rows(layers.plan(venv, SITE, group_below=10**6, groups=1))
    (label,) = [r[0] for r in rows if r[1] == "group"]
    assert label == "group-0 (alpha, beta-pkg, small0, small1 and 4 more)", label


def test_referenced_modules_sees_imports_inside_the_function() -> None:
    def fn():
        import json.decoder  # noqa: F401

        return os.path.join("a", "b")

    assert {"json", "os"} <= program.referenced_modules(fn)


def test_report_rows_largest_first_then_excluded(venv: Path) -> None:
    rows = layers.report_rows(layers.plan(venv, SITE, group_below=0))
    sizes = [r[2] for r in rows if r[1] != "excluded"]
    assert sizes == sorted(sizes, reverse=True)
    assert rows[-1][:2] == ("notebook", "excluded")


def test_interpreter_of_this_venv_is_planned_without_site_packages_or_tests() -> None:
    base = interpreter.base_prefix(Path(sys.prefix))
    assert base == Path(os.path.realpath(sys.base_prefix))
    if not interpreter.is_self_contained(base):
        pytest.fail(f"this test needs a self-contained base interpreter, not {base}")
    layer = interpreter.interpreter_layer(base)
    rel = interpreter.stdlib_rel(base)
    assert f"{rel}/os.py" in layer.files
    assert not any(f.startswith((f"{rel}/site-packages/", f"{rel}/test/")) for f in layer.files)
    assert layer.archive_name.startswith("I-")
    assert interpreter.interpreter_layer(base).key == layer.key


def test_system_python_cannot_be_shipped(tmp_path: Path) -> None:
    assert interpreter.should_ship("auto", Path("/usr")) is False
    with pytest.raises(LayerError, match=r"system Python.*ship_interpreter=False"):
        interpreter.should_ship(True, Path("/usr"))
    with pytest.raises(LayerError, match="'auto', True or False"):
        interpreter.should_ship("yes", tmp_path)


LDD_OUT = """/opt/py/bin/python3.11:
\tlinux-vdso.so.1 (0x00007ffd)
\tlibpython3.11.so.1.0 => /opt/py/lib/libpython3.11.so.1.0 (0x00007f01)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f02)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f03)
/opt/py/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so:
\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x00007f04)
\tlibcrypto.so.3 => /lib/x86_64-linux-gnu/libcrypto.so.3 (0x00007f05)
/opt/py/lib/python3.11/lib-dynload/_hashlib.cpython-311-x86_64-linux-gnu.so:
\tlibcrypto.so.3 => /lib/x86_64-linux-gnu/libcrypto.so.3 (0x00007f05)
\tlibffi.so.8 => not found
"""


def test_parse_ldd_keeps_libraries_outside_the_prefix_but_glibc_and_marks_missing_ones() -> None:
    needs = interpreter.parse_ldd(LDD_OUT, Path("/opt/py"))
    ssl = "/opt/py/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so"
    hashlib = "/opt/py/lib/python3.11/lib-dynload/_hashlib.cpython-311-x86_64-linux-gnu.so"
    assert needs == {
        "libssl.so.3": [ssl],
        "libcrypto.so.3": [ssl, hashlib],
        "libffi.so.8 (not found)": [hashlib],
    }


def test_parse_ldd_of_a_prefix_that_is_a_name_prefix_of_a_system_folder_keeps_its_libraries() -> (
    None
):
    out = "/opt/py/bin/python3:\n\tlibz.so.1 => /opt/py2/lib/libz.so.1 (0x1)\n"
    assert interpreter.parse_ldd(out, Path("/opt/py")) == {"libz.so.1": ["/opt/py/bin/python3"]}


def test_module_names_match_the_assembly_scripts() -> None:
    dynload = "/opt/py/lib/python3.11/lib-dynload"
    assert interpreter.module_name(f"{dynload}/_ssl.cpython-311-x86_64-linux-gnu.so") == "_ssl"
    assert interpreter.module_name(f"{dynload}/_foo.abi3.so") == "_foo"
    assert interpreter.module_name("/opt/py/bin/python3.11") == "python3.11"
    assert interpreter.module_name("/opt/py/lib/libpython3.11.so.1.0") == "libpython3.11"


def test_system_libraries_of_this_interpreter_name_the_modules_that_load_them() -> None:
    base = interpreter.base_prefix(Path(sys.prefix))
    needs = interpreter.system_libraries(base)
    assert needs, f"{base} loads nothing from the system: this test needs a pyenv-built Python"
    assert not [lib for lib in needs if lib.startswith(("libc.so", "libm.so", "linux-vdso"))]
    users = {u for us in needs.values() for u in us}
    assert "_ssl" in users and "_tkinter" not in users, needs
    assert all("/" not in u and "." not in u.replace("python3.", "") for u in users), users


def test_describe_system_libraries_wraps_whole_items_under_100_characters() -> None:
    from tfyarn_jupyter.ship import layered_launch

    needs = {f"lib{n}.so.{n}": ["_mod", f"_other{n}"] for n in range(30)}
    text = layered_launch.describe_system_libraries(needs)
    head, *rows = text.splitlines()
    assert "each node's system" in head and len(rows) > 3
    assert all(len(r) <= 100 and r.startswith("    ") for r in rows), rows
    items = ", ".join(r.strip().rstrip(",") for r in rows).split("), ")
    assert len(items) == 30 and items[0] == "lib0.so.0 (_mod, _other0", items
    assert "nothing" in layered_launch.describe_system_libraries({})


def test_base_prefix_needs_a_pyvenv_cfg(tmp_path: Path) -> None:
    with pytest.raises(LayerError, match="virtual environment"):
        interpreter.base_prefix(tmp_path)


def test_describe_lists_layers_largest_first_and_what_is_left_out(venv: Path) -> None:
    from tfyarn_jupyter.ship import layered_launch

    text = layered_launch.describe(layers.plan(venv, SITE, group_below=0))
    lines = text.splitlines()
    assert lines[0].startswith("3 layers")
    assert "left out    notebook" in lines[-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ship_interpreter": "yes"}, "ship_interpreter must be"),
        ({"exclude_packages": "jupyterlab"}, "exclude_packages must be a list"),
        ({"shared_layer_cache": "relative/folder"}, "absolute HDFS folder"),
    ],
)
def test_layer_options_are_checked_at_construction(options: dict, message: str) -> None:
    from tfyarn_jupyter.core.options import LaunchOptions
    from tfyarn_jupyter.core.spec import SpecError

    with pytest.raises(SpecError, match=message):
        LaunchOptions(**options)
    assert LaunchOptions(exclude_packages=["a"]).exclude_packages == ("a",)
