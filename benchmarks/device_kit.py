"""The device kit: the wheels the GPU benchmark needs that the GPU machine's image lacks (issue 33).

    .venv/bin/python benchmarks/device_kit.py build --out build/device-kit    # `make device-kit`
    python3 benchmarks/device_kit.py check --kit build/device-kit              # run by `gpu.sh --kit`
    .venv/bin/python benchmarks/device_kit.py standins | constraints           # the dry run's image stand-ins
    PYTHON benchmarks/device_kit.py image-only                                 # is an interpreter's set the image's?

`build` starts from ROOTS, the distributions the benchmark imports (`benchmarks/gpu.sh` through
`evaluator`, `tests.helpers` and `transformers`), and from the image's package list
(`benchmarks/device_image.txt`, with its source and date). A root the image has in a version our
code can use (USABLE) stays out; any other is downloaded as a wheel for the image's Python
(3.12, manylinux x86-64, `pip download --no-deps`), at our pin (requirements.txt) or, for a
dependency we do not pin, the version this project's environment has (the tested set). Each
wheel's `Requires-Dist` (markers for that Python) is then met by the image, by a wheel already in
the kit, or by another wheel added the same way, one version of each. A requirement on an image
package whose version the list does not record counts as met (the `check` run on the machine
verifies it before anything imports), except CARRIED_ANYWAY. NOT_NEEDED lists declared requirements
the benchmark never imports. It writes the wheels, `KIT.txt` (each wheel, why it is there, what was
assumed of the image) and fails past `--max-mib` (48 MiB: the working tree and the kit travel
together, 64 MiB at most).

`check` runs with the kit installed (`gpu.sh --kit DIR` installs it with `pip install --no-index
--no-deps --target` and puts it first on PYTHONPATH): every root importable at a usable version,
and every requirement of every kit wheel met by what is installed. It names what is missing and
exits 1, in about a second, before the benchmark loads a model.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
except ModuleNotFoundError:  # an interpreter without packaging still has pip's copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.specifiers import SpecifierSet  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
IMAGE_FILE = ROOT / "benchmarks" / "device_image.txt"
REQUIREMENTS = ROOT / "requirements.txt"
MAX_MIB = 48.0

# The distributions the GPU benchmark imports (`gpu.sh` on the CPU with `python -X importtime`,
# mapped to distributions; transitive ones are reached through Requires-Dist).
ROOTS = (
    "torch",
    "torchvision",
    "transformers",
    "huggingface-hub",
    "accelerate",
    "safetensors",
    "numpy",
    "scipy",
    "pillow",
    "scikit-image",
    "opencv-python-headless",
    "tqdm",
    "filelock",
    "jinja2",
    "requests",
    "pydantic",
    "rfdetr",
    "supervision",
    "diffusers",  # the regeneration calibration step of gpu.sh (SD 1.5's pipeline)
)
# What our code can use of a root the image has (its own version shown in device_image.txt). torch and
# torchvision: the GPU path runs on the image's 2.11 / 0.26 and our 2.14 / 0.29 (docs/scoring.md names
# the APIs that differ); transformers 5.17 and huggingface_hub 1.33: the dry run (`make device-dryrun`)
# runs the benchmark on these versions.
USABLE = {
    "torch": ">=2.11",
    "torchvision": ">=0.26",
    "transformers": ">=5.17",
    "huggingface-hub": ">=1.33",
    "numpy": ">=2.0",
    "safetensors": ">=0.6",
    "accelerate": ">=1.0",
}
# Image packages whose version the list does not record, carried all the same: a requirement of the
# kit needs a release too recent to assume (pydantic 2.14's typing-extensions >= 4.16.0, July 2026).
CARRIED_ANYWAY = {"typing-extensions": "pydantic and pydantic-core need >= 4.16.0 (July 2026)"}
# Declared requirements the benchmark never imports (so not carried, and not checked).
NOT_NEEDED = {
    "av": "supervision imports PyAV only inside its video reader and writer (supervision/_cv2/_video.py); "
    "the benchmark reads no video, and the wheel is 35 MB"
}
# The dry run's stand-ins for the image: releases newer than the image's that need what it lacks.
STANDIN_LIMITS = {
    "typer": "<0.29",  # typer 0.29 needs pydantic; the image has typer and no pydantic
    "python-dateutil": "<3",  # 3.0 needs tzdata; the image has python-dateutil and no tzdata
}
# The image's interpreter, for the wheels' markers and tags.
TARGET = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "extra": "",
}
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_image(path: Path = IMAGE_FILE) -> dict[str, str | None]:
    """The image's packages by canonical name: the version when the list records one, else None."""
    image: dict[str, str | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            image[canonical(name)] = version.strip() or None
    return image


def pinned(path: Path = REQUIREMENTS) -> dict[str, str]:
    """requirements.txt's `name==version` pins by canonical name (extras dropped)."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonical(name.split("[")[0])] = version.strip()
    return pins


def requirements_of(wheel: Path, environment: dict[str, str] = TARGET) -> list[Requirement]:
    """A wheel's `Requires-Dist` that apply in ENVIRONMENT (no extras)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode("utf-8")
    found = []
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            requirement = Requirement(line.split(":", 1)[1].strip())
            if requirement.marker is None or requirement.marker.evaluate(environment):
                found.append(requirement)
    return found


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class Kit:
    """What `build` decides: the wheels to carry (name → version, why) and what it assumed."""

    def __init__(self, image: dict[str, str | None], pins: dict[str, str]):
        self.image, self.pins = image, pins
        self.carry: dict[str, str] = {}  # canonical name → version
        self.why: dict[str, list[str]] = {}
        self.assumed: list[str] = []  # "requirement (of X)": met by the image's unrecorded version
        self.specifiers: dict[str, list[tuple[SpecifierSet, str]]] = {}

    def version_for(self, name: str, specifier: SpecifierSet) -> str:
        """Our pin, else this environment's version (the tested set), that meets SPECIFIER."""
        for version in (self.pins.get(name), _installed_version(name)):
            if version is not None and specifier.contains(version, prereleases=True):
                return version
        raise SystemExit(f"no tested version of {name} meets {specifier or 'any'}: pin one in requirements.txt")

    def needs(self, name: str, specifier: SpecifierSet, who: str) -> bool:
        """Whether NAME (for WHO, within SPECIFIER) must be carried; records what was assumed."""
        self.specifiers.setdefault(name, []).append((specifier, who))
        if name in self.carry:
            if not specifier.contains(self.carry[name], prereleases=True):
                raise SystemExit(f"{who} needs {name}{specifier}, but the kit carries {name} {self.carry[name]}")
            self.why[name].append(who)
            return False
        if name not in self.image or name in CARRIED_ANYWAY:
            return True
        version = self.image[name]
        if version is None:
            if str(specifier):
                self.assumed.append(f"{name}{specifier} (for {who})")
            return False
        return not specifier.contains(version, prereleases=True)


def download(name: str, version: str, folder: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(folder)]
    command += ["--python-version", TARGET["python_version"], "--implementation", "cp"]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    done = subprocess.run([*command, f"{name}=={version}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip download {name}=={version} failed:\n{done.stderr[-2000:]}")
    prefix = canonical(name).replace("-", "_")
    wheels = [w for w in folder.glob("*.whl") if canonical(w.name.split("-")[0]).replace("-", "_") == prefix]
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel of {name} in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]


def build(out: Path, max_mib: float = MAX_MIB) -> Kit:
    """Resolve, download and write the kit into OUT (replaced); `KIT.txt` says why each wheel is there."""
    kit = Kit(read_image(), pinned())
    queue: list[tuple[str, SpecifierSet, str]] = []
    for root in ROOTS:
        queue.append((canonical(root), SpecifierSet(USABLE.get(canonical(root), "")), "the GPU benchmark"))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        wheels: dict[str, Path] = {}
        while queue:
            name, specifier, who = queue.pop(0)
            if name in NOT_NEEDED or not kit.needs(name, specifier, who):
                continue
            version = kit.version_for(name, specifier)
            kit.carry[name], kit.why[name] = version, [who]
            wheels[name] = download(name, version, folder)
            for requirement in requirements_of(wheels[name]):
                queue.append((canonical(requirement.name), requirement.specifier, f"{name} {version}"))
        size = sum(w.stat().st_size for w in wheels.values()) / 2**20
        if size > max_mib:
            listed = ", ".join(f"{w.name} {w.stat().st_size / 2**20:.1f} MiB" for w in wheels.values())
            raise SystemExit(f"the kit is {size:.1f} MiB, over {max_mib:g} MiB: {listed}")
        if out.exists():
            for old in out.glob("*.whl"):
                old.unlink()
        out.mkdir(parents=True, exist_ok=True)
        for wheel in wheels.values():
            (out / wheel.name).write_bytes(wheel.read_bytes())
    lines = [f"# The device kit: {len(wheels)} wheels, {size:.1f} MiB, for Python 3.12 manylinux x86-64."]
    lines.append(f"# Made by benchmarks/device_kit.py against {IMAGE_FILE.relative_to(ROOT)}.")
    lines += [f"{wheels[name].name}  # for {', '.join(kit.why[name])}" for name in sorted(wheels)]
    lines += [f"# assumed of the image (checked on the machine): {item}" for item in kit.assumed]
    lines += [f"# not carried, never imported: {name} ({why})" for name, why in NOT_NEEDED.items()]
    (out / "KIT.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return kit


def check(kit: Path) -> list[str]:
    """Problems of this interpreter with KIT installed: roots missing or unusable, kit requirements unmet."""
    problems = []
    for root in ROOTS:
        name = canonical(root)
        version = _installed_version(name)
        if version is None:
            problems.append(f"{name} is not installed: the GPU benchmark imports it (add its wheel to the kit)")
        elif not SpecifierSet(USABLE.get(name, "")).contains(version, prereleases=True):
            problems.append(f"{name} {version} is installed, but the benchmark needs {name}{USABLE[name]}")
    wheels = sorted(kit.glob("*.whl"))
    if not wheels:
        problems.append(f"no wheels in {kit}")
    for wheel in wheels:
        owner = canonical(wheel.name.split("-")[0])
        for requirement in requirements_of(wheel, environment=_here()):
            name = canonical(requirement.name)
            if name in NOT_NEEDED:
                continue
            version = _installed_version(name)
            if version is None:
                problems.append(f"{owner} needs {requirement}, which is neither in the kit nor installed")
            elif not requirement.specifier.contains(version, prereleases=True):
                problems.append(f"{owner} needs {requirement}, but {name} {version} is installed")
    return problems


def _here() -> dict[str, str]:
    """This interpreter's marker values."""
    import platform

    return {
        "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
        "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name,
        "platform_python_implementation": platform.python_implementation(),
        "sys_platform": sys.platform,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "os_name": "posix" if sys.platform != "win32" else "nt",
        "extra": "",
    }


def standins(kit: Path | None = None) -> list[str]:
    """What the dry run installs in place of the image: the image's packages that the benchmark or a
    wheel of KIT imports, at the image's version where its list records one, else our pin (else
    unpinned); torch and torchvision aside (the dry run takes our pins)."""
    image, pins = read_image(), pinned()
    names = [canonical(root) for root in ROOTS]
    for wheel in sorted(kit.glob("*.whl")) if kit else []:
        names += [canonical(requirement.name) for requirement in requirements_of(wheel)]
    lines = []
    for name in dict.fromkeys(names):
        if name in image and name not in ("torch", "torchvision", *CARRIED_ANYWAY):
            version = image[name] or pins.get(name)
            lines.append(f"{name}=={version}" if version else name)
    return lines + [f"{name}{limit}" for name, limit in STANDIN_LIMITS.items()]


def constraints() -> list[str]:
    """The image's recorded versions as pip constraints for the dry run (torch's family aside: the dry
    run installs our pins, which need their own triton)."""
    ours = {"python", "torch", "torchvision", "torchaudio", "triton"}
    return [f"{name}=={version}" for name, version in read_image().items() if version and name not in ours]


def image_only() -> list[str]:
    """Distributions installed for this interpreter that the image does not have."""
    image = read_image()
    installed = {canonical(d.metadata["Name"]) for d in metadata.distributions()}
    return sorted(installed - set(image) - {"pip", "setuptools", "wheel"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="download the kit's wheels into --out")
    make.add_argument("--out", type=Path, default=ROOT / "build" / "device-kit")
    make.add_argument("--max-mib", type=float, default=MAX_MIB, help=f"fail past this size (default {MAX_MIB:g})")
    verify = commands.add_parser("check", help="with the kit installed: is everything the benchmark needs there?")
    verify.add_argument("--kit", type=Path, required=True)
    stand = commands.add_parser("standins", help="print the dry run's requirements standing in for the image")
    stand.add_argument("--kit", type=Path, help="also the image's packages this kit's wheels require")
    commands.add_parser("constraints", help="print the image's recorded versions as pip constraints")
    commands.add_parser("image-only", help="fail if this interpreter has packages the image does not")
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.max_mib)
    elif args.command == "check":
        problems = check(args.kit)
        for problem in problems:
            print(f"device kit: {problem}", file=sys.stderr)
        if problems:
            raise SystemExit(1)
        print(f"device kit: every requirement of the {len(list(args.kit.glob('*.whl')))} wheels and the benchmark met")
    elif args.command == "standins":
        print("\n".join(standins(args.kit)))
    elif args.command == "constraints":
        print("\n".join(constraints()))
    else:
        extra = image_only()
        if extra:
            raise SystemExit(f"not in the image ({IMAGE_FILE.name}): {', '.join(extra)}")
        print("every installed distribution is in the image's list")


if __name__ == "__main__":
    main()
