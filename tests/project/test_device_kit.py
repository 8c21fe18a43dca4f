"""The device kit (`benchmarks/device_kit.py`, `benchmarks/gpu.sh --kit`): the image's package
list, which requirements it meets, the resolver over wheels' Requires-Dist, the size cap, and gpu.sh
refusing to run with a wheel missing, naming it. Offline: the wheels here are built in the test
(a real kit is downloaded by `make device-kit`, and CI's `make device-dryrun` runs the benchmark
with it on Python 3.12)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import device_kit  # noqa: E402


def fake_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = (), size: int = 0) -> Path:
    """A minimal pure-Python wheel: one module, METADATA with REQUIRES as Requires-Dist."""
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    files = {
        f"{stem}/__init__.py": "x = 1\n" + "#" * size,
        f"{info}/METADATA": "\n".join(metadata) + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{file},,\n" for file in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in files.items():
            archive.writestr(file, text)
    return path


def test_the_image_list_has_its_source_and_what_the_note_says_is_there_and_missing():
    text = device_kit.IMAGE_FILE.read_text(encoding="utf-8")
    assert "Source:" in text and "2026-11-17" in text
    image = device_kit.read_image()
    # ../shared/notes/gpu-machine.md: these versions, and no rfdetr, supervision, pydantic, datasets, gradio.
    assert (image["torch"], image["torchvision"], image["transformers"], image["huggingface-hub"]) == (
        "2.11.0",
        "0.26.0",
        "5.17.0",
        "1.33.0",
    )
    assert image["python"] == "3.12.3" and image["numpy"] == "2.5.2" and image["pillow"] is None
    assert not {"rfdetr", "supervision", "pydantic", "pycocotools", "datasets", "gradio", "diffusers"} & set(image)


def test_requires_dist_is_read_for_the_images_python_without_extras_or_other_platforms(tmp_path):
    wheel = fake_wheel(
        tmp_path,
        "demo",
        "1.0",
        ("numpy>=2", "colorama; platform_system == 'Windows'", "rich; extra == 'cli'", "old; python_version < '3.10'"),
    )
    assert [str(r) for r in device_kit.requirements_of(wheel)] == ["numpy>=2"]


def test_which_requirements_the_image_meets():
    kit = device_kit.Kit({"numpy": "2.5.2", "scipy": None, "typing-extensions": None}, pins={})
    assert not kit.needs("numpy", SpecifierSet(">=2"), "a")  # recorded and new enough
    assert kit.needs("numpy", SpecifierSet(">=2.6"), "b")  # recorded, too old: carried
    assert not kit.needs("scipy", SpecifierSet(">=1.10"), "c") and kit.assumed == ["scipy>=1.10 (for c)"]
    assert kit.needs("pydantic", SpecifierSet(""), "d")  # not in the image
    assert kit.needs("typing-extensions", SpecifierSet(">=4.16"), "e")  # CARRIED_ANYWAY
    kit.carry["pydantic"], kit.why["pydantic"] = "2.14.4", ["d"]
    assert not kit.needs("pydantic", SpecifierSet(">=2,<3"), "f") and kit.why["pydantic"] == ["d", "f"]
    with pytest.raises(SystemExit, match="needs pydantic<2, but the kit carries pydantic 2.14.4"):
        kit.needs("pydantic", SpecifierSet("<2"), "g")


def test_the_resolver_follows_requires_dist_one_version_each_and_caps_the_size(tmp_path, monkeypatch):
    source = tmp_path / "index"
    source.mkdir()
    wheels = {
        "rfdetr": fake_wheel(source, "rfdetr", "1.11.2", ("pydantic<3,>=2", "supervision>=0.29", "numpy")),
        "supervision": fake_wheel(source, "supervision", "0.31.2", ("av>=14.2", "scipy>=1.10", "defusedxml")),
        "pydantic": fake_wheel(source, "pydantic", "2.14.4", ("pydantic-core==2.50.5",), size=200_000),
        "pydantic-core": fake_wheel(source, "pydantic-core", "2.50.5"),
        "defusedxml": fake_wheel(source, "defusedxml", "0.7.1"),
    }
    monkeypatch.setattr(device_kit, "ROOTS", ("rfdetr", "numpy", "pydantic"))
    monkeypatch.setattr(device_kit, "read_image", lambda: {"numpy": "2.5.2", "scipy": None})
    monkeypatch.setattr(device_kit, "pinned", lambda: {"rfdetr": "1.11.2", "pydantic": "2.14.4"})
    monkeypatch.setattr(
        device_kit,
        "_installed_version",
        lambda name: {"supervision": "0.31.2", "defusedxml": "0.7.1", "pydantic-core": "2.50.5"}.get(name),
    )
    downloaded = []

    def download(name, version, folder):
        downloaded.append(f"{name}=={version}")
        return Path(wheels[name])

    monkeypatch.setattr(device_kit, "download", download)
    out = tmp_path / "kit"
    kit = device_kit.build(out)
    # pydantic-core's version is this environment's (not pinned); av is NOT_NEEDED; numpy and scipy the image's.
    assert downloaded == [
        "rfdetr==1.11.2",
        "pydantic==2.14.4",
        "supervision==0.31.2",
        "pydantic-core==2.50.5",
        "defusedxml==0.7.1",
    ]
    assert sorted(p.name for p in out.glob("*.whl")) == sorted(w.name for w in wheels.values())
    assert kit.assumed == ["scipy>=1.10 (for supervision 0.31.2)"]
    listing = (out / "KIT.txt").read_text()
    assert "pydantic-2.14.4-py3-none-any.whl  # for the GPU benchmark, rfdetr 1.11.2" in listing
    assert "not carried, never imported: av" in listing
    with pytest.raises(SystemExit, match="over 0.1 MiB: .*pydantic-2.14.4-py3-none-any.whl"):
        downloaded.clear()
        device_kit.build(tmp_path / "small", max_mib=0.1)


@pytest.mark.slow
def test_gpu_sh_installs_the_kit_and_stops_naming_a_missing_wheel_before_the_benchmark(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    fake_wheel(kit, "kit-demo", "1.0", ("kit-demo-core==2.0",))  # its dependency's wheel is missing
    env = {**os.environ, "PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    command = ["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--device", "cpu", "--kit", str(kit)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kit-demo needs kit-demo-core==2.0, which is neither in the kit nor installed" in done.stderr
    assert "models on" not in done.stdout  # the benchmark never started
    assert (tmp_path / "negt2i-device-site" / "kit_demo" / "__init__.py").is_file()  # installed with --target

    fake_wheel(kit, "kit-demo-core", "2.0")
    done = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "every requirement of the 2 wheels and the benchmark met" in done.stdout
    assert "--batch-sizes" in done.stdout  # then gpu_bench.py itself, with the kit on PYTHONPATH
