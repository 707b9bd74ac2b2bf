"""Every ``nekoflow …`` command the README and the docs name is real, with real options, and
every relative link of the README points at a file that exists (fast: no processes).

The pages write commands for people, not shells: ``[--update]`` (optional), ``a|b``
(alternatives), ``BOOK_ID`` (placeholders). So a mention is checked for what can be checked
whatever the notation: the sub-command path names real commands, and each ``--option`` (or
``-x``) written after it is an option of that command. ``mkdocs build --strict`` checks the
links between pages of the site; the README lives outside it, hence the link check here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]
FENCE = re.compile(r"```(?:bash|sh|shell|console|text)?\n(.*?)\n```", re.S)
SPAN = re.compile(r"`(nekoflow [^`]+)`")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def mentions(page: Path) -> list[str]:
    """The ``nekoflow …`` commands of ``page``: fenced lines (comments dropped) and code spans."""
    text = page.read_text(encoding="utf-8")
    found = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = re.sub(r"\s#\s.*$", "", line)
            for part in re.split(r"&&|\|\||;|\$\(", line):
                words = part.split()
                if "nekoflow" in words:
                    found.append(" ".join(words[words.index("nekoflow") :]))
    found += SPAN.findall(FENCE.sub("", text))
    return found


def _root() -> Any:
    import typer

    from nekoflow.cli import app

    return typer.main.get_command(app)


def check(root: Any, mention: str) -> str | None:
    """None when ``mention`` names a real command and real options of it, else what is wrong."""
    ctx = root.make_context("nekoflow", ["--help"], resilient_parsing=True)
    command = root
    words = mention.split()[1:]
    while words and hasattr(command, "list_commands"):
        word = words[0].strip("[]")
        names = word.split("|")
        if not re.fullmatch(r"[a-z][a-z-]*", names[0]):
            break
        subs = [command.get_command(ctx, n) for n in names]
        if any(s is None for s in subs):
            return f"no command {names} under {command.name!r}"
        command, words = subs[0], words[1:]
        ctx = command.make_context(command.name, [], parent=ctx, resilient_parsing=True)
    known = {o for p in command.params for o in [*p.opts, *p.secondary_opts]} | {"--help"}
    for option in OPTION.findall(" ".join(words)):
        if (option.startswith("--") or len(option) == 2) and option not in known:
            return f"{command.name!r} has no option {option}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_the_page_names_exists(page: Path) -> None:
    root = _root()
    wrong = [f"{m!r}: {why}" for m in mentions(page) if (why := check(root, m))]
    assert wrong == [], "\n".join(wrong)


def test_the_readme_links_to_files_that_exist() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and t[0] != "#"]
    assert local, "the README links to no page"
    missing = [t for t in local if t and not (REPO / t).exists()]
    assert missing == []


def test_every_worker_command_names_real_queues() -> None:
    """``celery -A tasks worker -Q a,b`` anywhere in the README or the docs names queues tasks
    are routed to (a typo there is a worker that silently consumes nothing)."""
    import celeryconfig

    queues = {celeryconfig.task_default_queue} | {
        r["queue"] for r in celeryconfig.task_routes.values()
    }
    wrong = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for named in re.findall(r"celery -A \S+ worker[^`\n]*?-Q ([\w,]+)", text):
            if set(named.split(",")) - queues:
                wrong.append(f"{page.relative_to(REPO)}: -Q {named}")
    assert wrong == []


def _variables_read() -> set[str]:
    """Every ``NEKOFLOW_*`` variable something reads: the settings classes' fields, the CLI's
    option variables, and the names the code, the CI script and the test suite spell out."""
    import importlib.util
    import sys

    import typer

    from nekoflow.cli import app

    path = REPO / "docs" / "gen_reference.py"
    spec = importlib.util.spec_from_file_location("gen_reference", path)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", gen)
    spec.loader.exec_module(gen)
    known: set[str] = set()
    for module_name, class_name in gen.settings_classes():
        cls = getattr(importlib.import_module(module_name), class_name)
        for name, field in cls.model_fields.items():
            known |= set(gen._env_names(cls, name, field))
    root = typer.main.get_command(app)
    for _, command, ctx in gen._walk(root, root.context_class(root, info_name="nekoflow"), []):
        for param in command.get_params(ctx):
            envvar = param.envvar
            known |= {e for e in (envvar if isinstance(envvar, list | tuple) else [envvar]) if e}
    sources = [*(REPO / "nekoflow").rglob("*.py"), *(REPO / "tasks").rglob("*.py")]
    sources += [REPO / "celeryconfig.py", REPO / ".ci" / "run", REPO / "tests" / "conftest.py"]
    for source in sources:
        text = source.read_text(encoding="utf-8")
        known |= set(re.findall(r"(?:[\"']|\$\{)(NEKOFLOW_[A-Z0-9_]+)[\"':}]", text))
    return known


def test_every_variable_the_docs_name_is_read() -> None:
    """A ``NEKOFLOW_*`` variable the README, the docs or the compose file tell an operator to set
    is one nekoflow reads (a misspelt one would be ignored without a word). Names ending in
    ``_`` or ``_*`` stand for a family and are not checked."""
    known = _variables_read()
    wrong = []
    for page in [*PAGES, REPO / "docker-compose.yml"]:
        for name in set(re.findall(r"NEKOFLOW_[A-Z0-9_]+", page.read_text("utf-8"))):
            if not name.endswith("_") and name not in known:
                wrong.append(f"{page.relative_to(REPO)}: {name}")
    assert sorted(wrong) == []


def test_every_repository_path_and_compose_profile_the_docs_name_exists() -> None:
    """``bench/…``, ``monitoring/…``, ``examples/…``, ``tests/…`` … that a page tells the reader to
    run or open exist, and every ``docker compose --profile X`` names a profile of the compose
    file (placeholders such as ``nekoflow/platforms/<name>/`` are not checked)."""
    import yaml

    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    profiles = {p for s in compose["services"].values() for p in s.get("profiles", [])}
    prefix = r"(?:bench|monitoring|examples|tests|nekoflow|docs|\.ci|tasks)"
    wrong = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for path in re.findall(rf"(?<![\w/.:-])({prefix}/[\w./<>{{}}-]*\w)", text):
            if not re.search(r"[<{]", path) and not (REPO / path).exists():
                wrong.append(f"{page.relative_to(REPO)}: {path}")
        for profile in re.findall(r"--profile (\w+)", text):
            if profile not in profiles:
                wrong.append(f"{page.relative_to(REPO)}: profile {profile}")
    assert wrong == []
