"""The wheel is the product: built, installed into a fresh virtualenv, used from an unrelated folder.

One wheel per test session (a file lock lets pytest-xdist workers share it): the sources the build
needs are copied to a temporary folder, ``pip wheel`` builds them there, and ``pip --python``
installs the wheel with ``--no-deps --no-index`` into a virtualenv created without this project.
The virtualenv reaches ctxconf's *dependencies* through a ``.pth`` line naming the project venv's
site-packages (a plain path line: the editable install's import hook in there is not executed, so
the checkout is not importable; the first test proves it). Every command runs from a temporary
folder with ``CTXCONF_*`` and ``PYTHONPATH`` cleared, so the corpus and cassettes can only come from
the installed package.

The CI recipe in docs/ci-github-actions.md is run the same way: its baseline command, the workflow's
``run:`` steps (except the install step, which the wheel stands for) and the pre-commit hook's entry.

Marked ``wheel``: ``pytest -m "not wheel"`` skips it locally; ``make test`` and CI run it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from paths import DOCS, ROOT

from conformance.bundled import BUNDLED_FOLDERS

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

BUILD_INPUTS = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "reference_impl",
    "conformance",
    *BUNDLED_FOLDERS,
)

USER_ASSEMBLER = '''
"""A user's assembler in the plain f(messages, budget) form: it sends everything (so it fails the
budget and fail-closed checks, which the baseline records as known failures)."""


def assemble(messages, budget):
    return messages
'''

BROKEN_LOG = (
    '{"url": "https://api.openai.com/v1/chat/completions", "body": {"model": "gpt-4o", '
    '"messages": [{"role": "tool", "tool_call_id": "call_x", "content": "orphan"}]}}\n'
    '{"url": "https://api.openai.com/v1/chat/completions", "body": {"model": "gpt-4o", '
    '"messages": [{"role": "user", "content": "hi"}]}}\n'
)


@dataclass(frozen=True)
class Install:
    wheel: Path
    venv: Path
    user_folder: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CTXCONF_", "PYTHON", "VIRTUAL_ENV", "PYTEST_"))
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(self.user_folder)  # the user's own package (mypkg), nothing else
        env.update(extra)
        return env

    def run(
        self, *args: str, check_status: int | None = 0, **env: str
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args,
            cwd=self.user_folder,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check_status is not None:
            assert done.returncode == check_status, (
                f"{' '.join(args)} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done


def _build_and_install(base: Path) -> Install:
    source = base / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    dist = base / "dist"
    # Build isolation fetches setuptools from the pip cache or the index; the dev extra carries a
    # recent enough setuptools, so an offline machine builds without isolation.
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)],
        check=True,
    )
    (wheel,) = dist.glob("ctxconf-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Dependencies only: a path line, so the editable install's import hook there never runs.
    (Path(purelib) / "ctxconf-test-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    user = base / "elsewhere"
    (user / "mypkg").mkdir(parents=True)
    (user / "mypkg" / "__init__.py").write_text("")
    (user / "mypkg" / "ctx.py").write_text(USER_ASSEMBLER)
    return Install(wheel, venv, user)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Install:
    shared = (
        tmp_path_factory.getbasetemp()
        if worker_id == "master"
        else tmp_path_factory.getbasetemp().parent
    )
    base = shared / "ctxconf-wheel"
    with FileLock(str(shared / "ctxconf-wheel.lock")):
        if not (base / "done").exists():
            shutil.rmtree(base, ignore_errors=True)
            install = _build_and_install(base)
            (base / "done").write_text(str(install.wheel))
    wheel = Path((base / "done").read_text())
    return Install(wheel, base / "venv", base / "elsewhere")


def test_the_checkout_is_not_importable_and_the_wheel_is(installed: Install) -> None:
    done = installed.run(
        str(installed.bin / "python"),
        "-c",
        "import conformance, reference_impl, importlib.metadata as md; "
        "print(conformance.__file__); print(reference_impl.__file__); "
        "print(md.distribution('ctxconf').locate_file(''))",
    )
    for line in done.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(installed.venv.resolve()), line
    assert str(ROOT) not in done.stdout


def test_the_wheel_carries_every_bundled_folder_whole(installed: Install) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for folder in BUNDLED_FOLDERS:
        expected = {
            f"conformance/_data/{folder}/{p.relative_to(ROOT / folder).as_posix()}"
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert expected, folder
        assert expected <= names, sorted(expected - names)[:5]
    setup_list = re.search(
        r"^BUNDLED_FOLDERS = \((.*)\)$", (ROOT / "setup.py").read_text(), re.MULTILINE
    )
    assert setup_list is not None
    assert tuple(re.findall(r'"([^"]+)"', setup_list.group(1))) == BUNDLED_FOLDERS


def test_run_passes_on_the_built_in_corpus_with_recorded_verdicts(installed: Install) -> None:
    done = installed.run("ctxconf", "run", "--no-reports")
    assert "_data/scenarios" not in done.stderr
    summary = re.search(
        r"verdict provenance: (\d+) recorded-live, (\d+) recorded-emulated", done.stdout
    )
    assert summary is not None, done.stdout[-2000:]
    assert int(summary.group(2)) > 0
    assert re.search(r"([\d,]+) cases, \1 passed", done.stdout), done.stdout[-1000:]
    assert "cassettes: 0 file(s)" not in done.stdout


def test_scenarios_list_shows_the_built_in_corpus(installed: Install) -> None:
    done = installed.run("ctxconf", "scenarios", "list")
    expected = sum(
        len(yaml.safe_load(p.read_text())["scenarios"])
        for p in (ROOT / "scenarios").rglob("*.yaml")
        if "workloads" not in p.parts  # soak workloads, not scenarios (the loader skips them)
    )
    assert done.stdout.splitlines()[-1] == f"{expected} scenarios"


def test_a_users_scenario_folder_runs_alone(installed: Install) -> None:
    folder = installed.user_folder / "own-scenarios" / "must"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.yaml").write_text(
        "version: 1\nscenarios:\n  - id: my-roomy-case\n    title: a roomy case\n"
        "    shapes: [openai-chat]\n    session:\n      - {role: user, text: hello}\n"
        "    budget: 4000\n    expect: {outcome: either}\n"
    )
    done = installed.run(
        "ctxconf",
        "run",
        "--impl",
        "mypkg.ctx:assemble",
        "--scenarios",
        "own-scenarios",
        "--no-reports",
    )
    assert "my-roomy-case" in done.stdout
    assert "1 case, 1 passed" in done.stdout


def test_the_pytest_plugin_collects_and_runs_cases(installed: Install) -> None:
    done = installed.run(
        str(installed.bin / "python"),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--ctxconf-impl=mypkg.ctx:assemble",
        "--ctxconf-level=must",
        "--ctxconf-shapes=openai-chat",
        "-q",
        check_status=None,
    )
    last = done.stdout.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed)", last)}
    assert done.returncode == (1 if counts.get("failed") else 0), done.stdout[-2000:]
    assert counts.get("passed", 0) >= 10, last
    assert "ctxconf::" in done.stdout or counts.get("failed", 0) >= 1


def test_fuzz_runs_from_the_wheel(installed: Install) -> None:
    done = installed.run(
        "ctxconf", "fuzz", "--examples", "5", "--seed", "1", "--shapes", "openai-chat"
    )
    assert "seed 1" in done.stdout + done.stderr


def test_audit_judges_a_log_from_the_wheel(installed: Install) -> None:
    log = installed.user_folder / "requests.jsonl"
    log.write_text(BROKEN_LOG)
    done = installed.run(
        "ctxconf", "audit", "requests.jsonl", "--format", "jsonl", "--all", check_status=1
    )
    lines = [yaml.safe_load(line) for line in done.stdout.splitlines() if line.strip()]
    assert [line["verdict"] for line in lines] == ["reject", "accept"], done.stdout
    assert lines[0]["rule"] is not None


def _recipe_blocks() -> Mapping[str, str]:
    text = (DOCS / "ci-github-actions.md").read_text()
    found = dict(
        re.findall(r"<!-- (ctxconf-[a-z-]+)[^>]*-->\n```[a-z]+\n(.*?)```", text, re.DOTALL)
    )
    assert set(found) == {"ctxconf-ci-recipe", "ctxconf-ci-baseline", "ctxconf-pre-commit"}
    return found


def test_the_ci_recipe_installs_from_the_index_and_its_commands_work(installed: Install) -> None:
    blocks = _recipe_blocks()
    steps = yaml.safe_load(blocks["ctxconf-ci-recipe"])["jobs"]["ctxconf"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install")["run"]
    # From the package index: a plain requirement, not a path, a VCS URL or an editable checkout.
    assert re.search(r"^\s*pip install ctxconf(\s|$)", install, re.MULTILINE), install
    assert "git+" not in install
    assert "ctxconf checkout" not in install
    folder = installed.user_folder
    shutil.rmtree(folder / "reports", ignore_errors=True)
    baseline = blocks["ctxconf-ci-baseline"].strip()
    # Exit status 1: the known failures the baseline records; the file is written all the same.
    installed.run("bash", "-e", "-c", baseline, check_status=1)
    assert (folder / "conformance.json").is_file()
    output = folder / "github-output"
    output.write_text("")
    for step in steps:
        if "run" not in step or step.get("name") in {"Install", "Fail on regressions"}:
            continue
        installed.run("bash", "-e", "-c", step["run"], GITHUB_OUTPUT=str(output))
    assert output.read_text().strip() == "status=0"
    comment = next(s for s in steps if "sticky-pull-request-comment" in s.get("uses", ""))
    report = folder / comment["with"]["path"]
    assert report.read_text().startswith("#"), report
    hook = yaml.safe_load(blocks["ctxconf-pre-commit"])["repos"][0]["hooks"][0]
    installed.run("bash", "-e", "-c", hook["entry"])


def test_missing_corpus_is_a_named_error_not_a_traceback(
    installed: Install, tmp_path: Path
) -> None:
    done = installed.run(
        "ctxconf",
        "run",
        "--no-reports",
        check_status=None,
        CTXCONF_SCENARIOS=str(tmp_path / "nope"),
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
