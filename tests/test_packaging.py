"""The wheel configuration, checked by cibuildwheel itself (issue 34, item 5).

cibuildwheel computes the options of every build identifier of every platform
from pyproject.toml, as it does on the CI runners, and evaluates each build
environment with its own bashlex evaluator (the step that failed every macOS
job when the environment held a pipe inside ``$(...)``). Commands the
environment would run are recorded, not run: option computation needs no
macOS, Windows or network. Also here: the OpenMP check every wheel's tests
start with, and the license metadata.
"""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="not run from a source checkout")

#: The environment of a CI runner, as far as the evaluation reads it.
RUNNER_ENV = {"HOME": "/Users/runner", "PATH": "/usr/local/bin:/usr/bin:/bin"}
PYTHONS = ("cp310", "cp311", "cp312", "cp313", "cp314")
#: (platform, architecture suffix of the identifier) of every wheel the workflow builds.
WHEELS = {"linux": ("manylinux_x86_64", "manylinux_aarch64"), "macos": ("macosx_x86_64", "macosx_arm64"),
          "windows": ("win_amd64",)}
#: The deployment target of each macOS architecture (issue 34): what the OpenMP runtime is built for.
MACOS_TARGETS = {"x86_64": "10.15", "arm64": "11.0"}


def _pyproject():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _cibuildwheel():
    pytest.importorskip("cibuildwheel", reason="cibuildwheel (the test extra, Python >= 3.11) is not installed")
    from cibuildwheel.options import CommandLineArguments, compute_options
    from cibuildwheel.platforms import ALL_PLATFORM_MODULES, get_build_identifiers

    return CommandLineArguments, compute_options, ALL_PLATFORM_MODULES, get_build_identifiers


def build_options(platform, package_dir=ROOT):
    """``{identifier: (BuildOptions, evaluated environment, commands the evaluation ran)}`` for one platform."""
    CommandLineArguments, compute_options, modules, get_build_identifiers = _cibuildwheel()
    args = CommandLineArguments.defaults()
    args.platform = platform
    args.package_dir = pathlib.Path(package_dir)
    options = compute_options(platform=platform, command_line_arguments=args, env=dict(RUNNER_ENV))
    identifiers = get_build_identifiers(platform_module=modules[platform],
                                        build_selector=options.globals.build_selector,
                                        architectures=options.globals.architectures)
    out = {}
    for identifier in identifiers:
        ran = []

        def executor(command, env, ran=ran):
            ran.append(command)
            return "/executed/" + "_".join(command)

        opts = options.build_options(identifier)
        environment = opts.environment.as_dictionary(prev_environment=dict(RUNNER_ENV), executor=executor)
        opts.test_environment.as_dictionary(prev_environment=dict(RUNNER_ENV), executor=executor)
        out[identifier] = (opts, environment, ran)
    return out


@pytest.mark.parametrize("platform", sorted(WHEELS))
def test_cibuildwheel_computes_every_identifiers_options(platform):
    options = build_options(platform)
    expected = {f"{py}-{arch}" for py in PYTHONS for arch in WHEELS[platform]}
    assert set(options) == expected
    for identifier, (opts, environment, ran) in options.items():
        assert ran == [], f"{identifier}: the build environment runs commands {ran}"
        assert opts.test_command is not None and "check_openmp.py" in opts.test_command
        assert opts.test_command.index("check_openmp.py") < opts.test_command.index("selfcheck")
        assert opts.repair_command


def test_macos_wheels_have_per_architecture_targets_and_their_own_openmp_runtime():
    seen = {}
    for identifier, (opts, environment, _) in build_options("macos").items():
        arch = "x86_64" if identifier.endswith("_x86_64") else "arm64"
        assert environment["MACOSX_DEPLOYMENT_TARGET"] == MACOS_TARGETS[arch], identifier
        assert environment["ROPT_MACOS_ARCH"] == arch
        # the runtime is built into a folder of its own per architecture and target, under the runner's home
        root = environment["OpenMP_ROOT"]
        assert root.startswith(RUNNER_ENV["HOME"] + "/") and arch in root and MACOS_TARGETS[arch] in root
        assert opts.before_all.split() == ["bash", "{project}/.ci/macos-libomp"]
        assert "delocate-wheel --require-archs" in opts.repair_command
        seen.setdefault(arch, set()).add(root)
    assert {arch: len(roots) for arch, roots in seen.items()} == {"x86_64": 1, "arm64": 1}
    assert (ROOT / ".ci" / "macos-libomp").is_file()


def test_the_check_fails_on_an_environment_bashlex_cannot_evaluate(tmp_path):
    # The macOS environment of before (a pipe inside $(...)) in an otherwise valid copy of pyproject.toml.
    text = (ROOT / "pyproject.toml").read_text()
    old = text.split('[[tool.cibuildwheel.overrides]]\nselect = "*-macosx_x86_64"\nenvironment = ', 1)[1].split("\n")[0]
    piped = '{ MACOSX_DEPLOYMENT_TARGET = "$(sw_vers -productVersion | cut -d. -f1).0" }'
    (tmp_path / "pyproject.toml").write_text(text.replace(old, piped))
    with pytest.raises(ValueError, match="Unsupported bash"):
        build_options("macos", package_dir=tmp_path)


def test_no_musllinux_wheels_and_the_install_page_says_why():
    cibw = _pyproject()["tool"]["cibuildwheel"]
    assert "*-musllinux_*" in cibw["skip"]
    text = (ROOT / "docs" / "install.md").read_text()
    assert "musllinux" in text and "scikit-learn" in text.split("musllinux", 1)[1][:600]


def _check_openmp():
    spec = importlib.util.spec_from_file_location("check_openmp", ROOT / ".ci" / "check_openmp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_openmp_check_fails_a_core_without_openmp():
    check = _check_openmp().check
    assert check({"openmp": True, "version": "0.1.0"}) == 0
    message = check({"openmp": False, "version": "0.1.0", "compiler": "clang 17"})
    assert isinstance(message, str) and "without OpenMP" in message  # sys.exit(message): status 1


def test_the_openmp_check_passes_this_build_exactly_when_it_has_openmp():
    import rateopt

    info = rateopt.get_config()
    assert (_check_openmp().check(info) == 0) == bool(info["openmp"])


def test_license_metadata_is_pep_639():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639 forbids both
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    requires = _pyproject()["build-system"]["requires"]
    assert any(r.replace(" ", "").startswith("scikit-build-core>=0.11") for r in requires)
    pythons = {c.rsplit(":: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")}
    assert pythons == {f"3.{py[3:]}" for py in PYTHONS}
